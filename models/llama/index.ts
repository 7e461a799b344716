// weft-ml/llama: llama-family inference (llama, qwen2) from a GGUF file on weft's ops.
//
//   const model = await Llama.load('model.gguf', { backend: 'CPU', onProgress: (f) => ... })
//   const ctx = model.createContext({ nCtx: 2048 })
//   for await (const { text } of model.generate(ctx, 'Once upon a time', { maxTokens: 64 })) ...
export { Llama, type LoadOptions, type GenerateOptions } from './llama.ts'
export { LlamaContext, causalMask, type ContextOptions, type DecodeOptions, type PreparedBatch, type Timings } from './context.ts'
export { buildLlama, type BuiltGraph, type GraphShape } from './graph.ts'
export { KvCache, rowSize } from './kv-cache.ts'
export { Vocab, ATTR, type TokenizeOptions, type VocabType } from './vocab.ts'
export { Sampler, Mt19937, argmax, type SamplerOptions } from './sampling.ts'
export { readHParams, ModelFormatError, type HParams, type Arch, type RopeSettings } from './hparams.ts'
export type { ModelWeights, LayerWeights } from './weights.ts'
