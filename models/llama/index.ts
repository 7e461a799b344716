// weft-ml/llama: llama-family inference (llama, qwen2) from a GGUF file on weft's ops.
//
//   const model = await Llama.load('model.gguf', { backend: 'CPU', onProgress: (f) => ... })
//   const ctx = model.createContext({ nCtx: 2048 })
//   for await (const { text } of model.generate(ctx, 'Once upon a time', { maxTokens: 64 })) ...
export { Llama, type LoadOptions, type GenerateOptions } from './llama.js'
export { LlamaContext, causalMask, type ContextOptions, type DecodeOptions, type PreparedBatch, type Timings } from './context.js'
export { buildLlama, type BuiltGraph, type GraphShape } from './graph.js'
export { KvCache, rowSize } from './kv-cache.js'
export { Vocab, ATTR, type TokenizeOptions, type VocabType } from './vocab.js'
export { Sampler, Mt19937, argmax, type SamplerOptions } from './sampling.js'
export { readHParams, ModelFormatError, type HParams, type Arch, type RopeSettings } from './hparams.js'
export type { ModelWeights, LayerWeights } from './weights.js'
