// Decoding with a KV cache (llama_context / llama_decode at the reference commit, one
// sequence): a batch of tokens is split into micro-batches of at most nBatch tokens; each
// builds build_llama's graph for its size, the graph allocator places its intermediate
// tensors in one reused buffer (reserved up front for the worst case), the inputs are
// written, and the backend computes it. Timings are kept as llama_perf_context does.
import type { Backend, GgmlType } from 'weft-ml'
import { buildLlama, KQ_MASK_PAD, type BuiltGraph, type GraphShape } from './graph.js'
import type { HParams } from './hparams.js'
import { KvCache, kvPadding, padTo } from './kv-cache.js'
import type { ModelWeights } from './weights.js'
import { weft } from './weft.js'

export interface ContextOptions {
  /** Context length in tokens (KV cells). Default: the model's training context, at most 4096. */
  nCtx?: number
  /** Largest micro-batch (llama.cpp's n_ubatch). Default 512. */
  nBatch?: number
  /** Attention through FLASH_ATTN_EXT instead of MUL_MAT + SOFT_MAX. Default false (llama.cpp's default). */
  flashAttn?: boolean
  /** KV cache element types. Default f16. */
  typeK?: GgmlType
  typeV?: GgmlType
}

export interface DecodeOptions {
  /** Return every token's logits instead of the last one's. */
  allLogits?: boolean
}

/** What llama_perf_context_print reports. */
export interface Timings {
  promptMs: number
  promptTokens: number
  evalMs: number
  evalTokens: number
}

/** A micro-batch ready to compute: `commit` marks its tokens as cached once computed. */
export interface PreparedBatch extends BuiltGraph {
  commit(): void
}

export interface ModelParts {
  hp: HParams
  weights: ModelWeights
  backend: Backend
  nWeightTensors: number
}

export class LlamaContext {
  readonly kv: KvCache
  readonly nBatch: number
  readonly flashAttn: boolean
  readonly timings: Timings = { promptMs: 0, promptTokens: 0, evalMs: 0, evalTokens: 0 }
  private readonly allocator
  private disposed = false
  private decoding = false

  constructor(
    private readonly model: ModelParts,
    options: ContextOptions = {},
  ) {
    const { hp, backend } = model
    this.flashAttn = options.flashAttn ?? false
    const nCtx = options.nCtx ?? Math.min(hp.nCtxTrain, 4096)
    if (!Number.isInteger(nCtx) || nCtx <= 0) throw new Error(`context: nCtx=${nCtx} must be a positive integer`)
    const padded = padTo(nCtx, kvPadding(this.flashAttn))
    this.nBatch = Math.min(options.nBatch ?? 512, padded)
    if (!Number.isInteger(this.nBatch) || this.nBatch <= 0) throw new Error(`context: nBatch=${options.nBatch} must be a positive integer`)
    this.kv = new KvCache(backend, hp, nCtx, options.typeK ?? 'f16', options.typeV ?? 'f16', this.flashAttn)
    this.allocator = new weft.GraphAllocator(backend)
    // Reserve the worst case (a full micro-batch attending to every cell), as llama.cpp does.
    const worst = this.build({ nTokens: this.nBatch, nKv: this.kv.size, kvHead: this.kv.size - this.nBatch, nOutputs: this.nBatch })
    this.allocator.reserve(worst.graph)
    worst.ctx.dispose()
  }

  /** Tokens in the cache (the next token's position). */
  get nPast(): number {
    return this.kv.used
  }

  get nCtx(): number {
    return this.kv.size
  }

  /** Bytes of the graph allocator's compute buffer. */
  get computeBufferSize(): number {
    return this.allocator.bufferSize(0)
  }

  /** Forget every token: the next decode starts at position 0. */
  clear(): void {
    this.kv.clear()
  }

  /** The graph for one micro-batch (also used by tools that inspect or profile it). */
  build(shape: GraphShape): BuiltGraph {
    return buildLlama(this.model.hp, this.model.weights, this.kv, shape, this.flashAttn, this.model.nWeightTensors)
  }

  /**
   * Run `tokens` through the model after the tokens already in the cache; resolves to the
   * logits of the last token ([nVocab]) or, with allLogits, of every token ([n * nVocab]).
   */
  async decode(tokens: number[], options: DecodeOptions = {}): Promise<Float32Array> {
    if (this.disposed) throw new Error('context: disposed')
    if (this.decoding) throw new Error('decode: this context is decoding already; await that first')
    this.decoding = true
    try {
      return await this.decodeAll(tokens, options)
    } finally {
      this.decoding = false
    }
  }

  private async decodeAll(tokens: number[], options: DecodeOptions): Promise<Float32Array> {
    const n = tokens.length
    if (n === 0) throw new Error('decode: no tokens')
    if (this.kv.used + n > this.kv.size) throw new Error(`decode: ${this.kv.used} + ${n} tokens do not fit the context of ${this.kv.size}`)
    const nVocab = this.model.hp.nVocab
    for (const t of tokens) {
      if (!Number.isInteger(t) || t < 0 || t >= nVocab) throw new Error(`decode: token ${t} is not in 0..${nVocab - 1}`)
    }
    const t0 = performance.now()
    const out = new Float32Array((options.allLogits ? n : 1) * nVocab)
    for (let start = 0; start < n; start += this.nBatch) {
      const batch = tokens.slice(start, start + this.nBatch)
      const last = start + batch.length === n
      const logits = await this.decodeMicroBatch(batch, options.allLogits ? batch.length : 1)
      if (options.allLogits) out.set(logits, start * nVocab)
      else if (last) out.set(logits)
    }
    const ms = performance.now() - t0
    if (n > 1) {
      this.timings.promptMs += ms
      this.timings.promptTokens += n
    } else {
      this.timings.evalMs += ms
      this.timings.evalTokens += n
    }
    return out
  }

  /**
   * Build one micro-batch's graph after the cached tokens, place it with the graph allocator
   * and write its inputs; the caller computes `graph` and then calls `commit`. decode does
   * all of this; tools that time the graph node by node use it directly.
   */
  prepare(tokens: number[], nOutputs: number): PreparedBatch {
    const nTokens = tokens.length
    const kvHead = this.kv.used
    const pad = kvPadding(this.flashAttn)
    const cellMax = kvHead + nTokens
    const nKv = Math.min(this.kv.size, Math.max(pad, padTo(cellMax, pad)))
    const g = this.build({ nTokens, nKv, kvHead, nOutputs })
    try {
      this.allocator.allocGraph(g.graph)
      g.tokens.set(Int32Array.from(tokens))
      g.pos.set(Int32Array.from(tokens, (_, i) => kvHead + i))
      g.mask.set(causalMask(nTokens, nKv, kvHead))
      g.outIds.set(Int32Array.from({ length: nOutputs }, (_, i) => nTokens - nOutputs + i))
    } catch (e) {
      g.ctx.dispose()
      throw e
    }
    return { ...g, commit: () => (this.kv.used = cellMax) }
  }

  private async decodeMicroBatch(tokens: number[], nOutputs: number): Promise<Float32Array> {
    const g = this.prepare(tokens, nOutputs)
    try {
      await this.model.backend.compute(g.graph)
      g.commit()
      return await g.logits.toFloat32Async()
    } finally {
      g.ctx.dispose()
    }
  }

  /** Free the cache and the compute buffer (throws while a decode runs). */
  dispose(): void {
    if (this.disposed) return
    if (this.decoding) throw new Error('context: a decode is running; await it before dispose')
    this.disposed = true
    this.allocator.dispose()
    this.kv.dispose()
  }
}

/**
 * llama_set_inputs' KQ mask for one sequence: token j (at position kvHead + j) sees cells
 * 0..kvHead + j; padding rows see nothing.
 */
export function causalMask(nTokens: number, nKv: number, kvHead: number): Float32Array {
  const rows = padTo(nTokens, KQ_MASK_PAD)
  const m = new Float32Array(nKv * rows).fill(-Infinity)
  for (let j = 0; j < nTokens; j++) m.fill(0, j * nKv, j * nKv + Math.min(nKv, kvHead + j + 1))
  return m
}
