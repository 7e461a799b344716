// The KV cache: one K and one V tensor per layer in a backend buffer (llama_kv_cache_init at
// the reference commit), for one sequence. K rows are stored per token; V is stored
// transposed (a row per channel) unless flash attention reads it, as llm_build_kv_store does.
import type { Backend, BackendBuffer, Context as WeftContext, GgmlType, Tensor } from 'weft-ml'
import type { HParams } from './hparams.js'
import { weft } from './weft.js'

/** llama_kv_cache_get_padding: the flash-attention kernels want 256-cell steps. */
export function kvPadding(flashAttn: boolean): number {
  return flashAttn ? 256 : 32
}

export function padTo(n: number, step: number): number {
  return Math.ceil(n / step) * step
}

const traits = new Map(weft.typeTraits().map((t) => [t.name, t]))

/** ggml_row_size: bytes of `n` elements of `type`. */
export function rowSize(type: GgmlType, n: number): number {
  const t = traits.get(type)
  if (!t) throw new Error(`unknown type ${type}`)
  return (t.typeSize * n) / t.blckSize
}

export class KvCache {
  /** Cells (context length), padded as llama.cpp pads n_ctx. */
  readonly size: number
  readonly k: Tensor[] = []
  readonly v: Tensor[] = []
  readonly ctx: WeftContext
  readonly buffer: BackendBuffer
  /** Cells holding tokens: positions 0..used-1 (one sequence, filled in order). */
  used = 0

  constructor(
    backend: Backend,
    hp: HParams,
    nCtx: number,
    readonly typeK: GgmlType,
    readonly typeV: GgmlType,
    readonly flashAttn: boolean,
  ) {
    this.size = padTo(nCtx, kvPadding(flashAttn))
    this.ctx = new weft.Context({ memSize: (2 * hp.nLayer + 1) * weft.Context.tensorOverhead(), noAlloc: true })
    for (let il = 0; il < hp.nLayer; il++) {
      const k = this.ctx.newTensor1d(typeK, hp.nEmbdHeadK * hp.nHeadKv * this.size)
      const v = this.ctx.newTensor1d(typeV, hp.nEmbdHeadV * hp.nHeadKv * this.size)
      k.name = `cache_k_l${il}`
      v.name = `cache_v_l${il}`
      this.k.push(k)
      this.v.push(v)
    }
    const buffer = backend.allocCtxTensors(this.ctx)
    if (!buffer) throw new Error('kv cache: nothing was allocated')
    this.buffer = buffer
    // Cells past the filled ones are read (and masked): keep them finite.
    this.buffer.clear(0)
  }

  /** Bytes the cache holds. */
  get bytes(): number {
    return this.buffer.size
  }

  clear(): void {
    this.used = 0
    this.buffer.clear(0)
  }

  dispose(): void {
    this.buffer.dispose()
    this.ctx.dispose()
  }
}
