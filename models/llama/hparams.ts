// A llama-family model's hyperparameters from its GGUF metadata, read as llama.cpp's
// llm_load_hparams reads them at the reference commit (keys "<arch>.*"), plus the rope
// settings llama_new_context_with_model derives from them (cparams).
import type { Gguf } from 'weft-ml'

/** Architectures this module builds (both go through build_llama's graph). */
export type Arch = 'llama' | 'qwen2'

/** ggml's rope modes: llama rotates adjacent pairs, qwen2 GPT-NeoX halves. */
export const ROPE_TYPE_NORM = 0
export const ROPE_TYPE_NEOX = 2

export interface RopeSettings {
  /** Rotated dims per head (n_rot). */
  nDims: number
  /** 0: adjacent pairs (llama), 2: GPT-NeoX halves (qwen2). */
  mode: 0 | 2
  nCtxOrig: number
  freqBase: number
  freqScale: number
  extFactor: number
  attnFactor: number
  betaFast: number
  betaSlow: number
}

export interface HParams {
  arch: Arch
  name: string
  nVocab: number
  nCtxTrain: number
  nEmbd: number
  nLayer: number
  nFf: number
  nHead: number
  nHeadKv: number
  nEmbdHeadK: number
  nEmbdHeadV: number
  normRmsEps: number
  rope: RopeSettings
  /** general.file_type (llama_ftype), -1 when absent. */
  fileType: number
}

/** A model file a user gave us is input: every problem is an Error naming the key. */
export class ModelFormatError extends Error {
  readonly code = 'WEFT_MODEL_FORMAT'
}

function num(g: Gguf, key: string, fallback?: number): number {
  const v = g.get(key)
  if (v === null || v === undefined) {
    if (fallback === undefined) throw new ModelFormatError(`model: the file has no '${key}'`)
    return fallback
  }
  if (typeof v === 'bigint') return Number(v)
  if (typeof v !== 'number') throw new ModelFormatError(`model: '${key}' is ${typeof v}, expected a number`)
  return v
}

/** llama.cpp's get_key_or_arr: one value for all layers, or one per layer (all equal here). */
function perLayer(g: Gguf, key: string, nLayer: number, fallback?: number): number {
  const v = g.get(key)
  if (!Array.isArray(v)) return num(g, key, fallback)
  if (v.length !== nLayer) throw new ModelFormatError(`model: '${key}' has ${v.length} values for ${nLayer} layers`)
  const first = Number(v[0])
  if (v.some((x) => Number(x) !== first)) {
    throw new ModelFormatError(`model: '${key}' differs between layers, which this module does not support`)
  }
  return first
}

function positiveInt(key: string, v: number): number {
  if (!Number.isInteger(v) || v <= 0) throw new ModelFormatError(`model: '${key}'=${v} must be a positive integer`)
  return v
}

export function readHParams(g: Gguf): HParams {
  const archValue = g.get('general.architecture')
  if (archValue !== 'llama' && archValue !== 'qwen2') {
    throw new ModelFormatError(`model: architecture '${String(archValue)}' is not supported (llama, qwen2)`)
  }
  const arch: Arch = archValue
  const k = (s: string) => `${arch}.${s}`
  // llama.cpp: <arch>.vocab_size, else the length of the token list (read only if needed:
  // converting a large vocabulary to JS strings is not free).
  let nVocab = num(g, k('vocab_size'), 0)
  if (nVocab === 0) {
    const tokens = g.get('tokenizer.ggml.tokens')
    nVocab = Array.isArray(tokens) ? tokens.length : 0
  }
  const nLayer = positiveInt(k('block_count'), num(g, k('block_count')))
  const nEmbd = positiveInt(k('embedding_length'), num(g, k('embedding_length')))
  const nHead = positiveInt(k('attention.head_count'), perLayer(g, k('attention.head_count'), nLayer))
  const nHeadKv = positiveInt(k('attention.head_count_kv'), perLayer(g, k('attention.head_count_kv'), nLayer, nHead))
  if (nHead % nHeadKv !== 0) throw new ModelFormatError(`model: ${nHead} heads are not a multiple of ${nHeadKv} KV heads`)
  const nEmbdHeadK = num(g, k('attention.key_length'), nEmbd / nHead)
  const nEmbdHeadV = num(g, k('attention.value_length'), nEmbd / nHead)
  const nRot = num(g, k('rope.dimension_count'), nEmbdHeadK)
  // build_llama asserts these (and llama.cpp refuses llama files where n_rot differs).
  if (nEmbdHeadK !== nEmbdHeadV || nRot !== nEmbdHeadK || !Number.isInteger(nEmbdHeadK)) {
    throw new ModelFormatError(`model: head sizes k=${nEmbdHeadK} v=${nEmbdHeadV} and n_rot=${nRot} must be equal`)
  }
  const nCtxTrain = positiveInt(k('context_length'), num(g, k('context_length')))

  // Rope: the training settings, then cparams' derivation with default context params.
  const scaling = g.get(k('rope.scaling.type')) ?? 'linear'
  if (scaling !== 'none' && scaling !== 'linear' && scaling !== 'yarn') {
    throw new ModelFormatError(`model: rope scaling '${String(scaling)}' is not supported (none, linear, yarn)`)
  }
  let ropeScale = num(g, k('rope.scaling.factor'), 0)
  if (ropeScale === 0) ropeScale = num(g, k('rope.scale_linear'), 0)
  const freqScaleTrain = ropeScale === 0 ? 1 : 1 / ropeScale
  const rope: RopeSettings = {
    nDims: nRot,
    mode: arch === 'qwen2' ? ROPE_TYPE_NEOX : ROPE_TYPE_NORM,
    nCtxOrig: num(g, k('rope.scaling.original_context_length'), 0) || nCtxTrain,
    freqBase: num(g, k('rope.freq_base'), 10000),
    freqScale: scaling === 'none' ? 1 : freqScaleTrain,
    extFactor: scaling === 'yarn' ? 1 : 0,
    attnFactor: num(g, k('rope.scaling.attn_factor'), 1),
    betaFast: 32,
    betaSlow: 1,
  }
  const name = g.get('general.name')
  return {
    arch,
    name: typeof name === 'string' ? name : '',
    nVocab: positiveInt(k('vocab_size'), nVocab),
    nCtxTrain,
    nEmbd,
    nLayer,
    nFf: positiveInt(k('feed_forward_length'), perLayer(g, k('feed_forward_length'), nLayer)),
    nHead,
    nHeadKv,
    nEmbdHeadK,
    nEmbdHeadV,
    normRmsEps: num(g, k('attention.layer_norm_rms_epsilon')),
    rope,
    fileType: num(g, 'general.file_type', -1),
  }
}
