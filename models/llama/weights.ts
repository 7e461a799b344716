// A llama-family model's tensors, by llama.cpp's names (LLM_TENSOR_* at the reference
// commit), checked against the shapes llm_load_tensors expects, and loaded into a backend
// through Gguf.loadWeights (mapped in place on the CPU, uploaded elsewhere).
import type { Backend, BackendBuffer, Context as WeftContext, Gguf, Tensor } from 'weft-ml'
import { ModelFormatError, type HParams } from './hparams.js'
import { weft } from './weft.js'

export interface LayerWeights {
  attnNorm: Tensor
  wq: Tensor
  wk: Tensor
  wv: Tensor
  wo: Tensor
  bq?: Tensor
  bk?: Tensor
  bv?: Tensor
  bo?: Tensor
  ffnNorm: Tensor
  ffnGate: Tensor
  ffnDown: Tensor
  ffnUp: Tensor
  ffnGateB?: Tensor
  ffnDownB?: Tensor
  ffnUpB?: Tensor
  /** Llama 3's rope frequency factors (shared by every layer). */
  ropeFreqs?: Tensor
}

export interface ModelWeights {
  tokEmbd: Tensor
  outputNorm: Tensor
  /** The LM head; the token embedding itself when the file ties them. */
  output: Tensor
  layers: LayerWeights[]
  /** Bytes of tensor data and number of parameters, as llama-bench reports them. */
  size: number
  nParams: number
}

export interface LoadProgress {
  (fraction: number): void
}

/** Create the file's tensors in a no-alloc context and pick the model's out by name. */
export function createWeights(g: Gguf, hp: HParams): { ctx: WeftContext; weights: ModelWeights } {
  const infos = g.tensorInfos()
  const ctx = new weft.Context({ memSize: (infos.length + 16) * weft.Context.tensorOverhead(), noAlloc: true })
  g.createTensors(ctx)
  const get = (name: string, ne: number[], required: boolean): Tensor | undefined => {
    const t = ctx.getTensor(name)
    if (!t) {
      if (required) throw new ModelFormatError(`model: the file has no tensor '${name}'`)
      return undefined
    }
    const shape = t.ne.slice(0, ne.length)
    if (shape.some((n, i) => n !== ne[i]) || t.ne.slice(ne.length).some((n) => n !== 1)) {
      throw new ModelFormatError(`model: tensor '${name}' is [${t.shape}], expected [${ne}]`)
    }
    return t
  }
  const need = (name: string, ne: number[]) => get(name, ne, true) as Tensor
  const opt = (name: string, ne: number[]) => get(name, ne, false)
  const { nEmbd, nVocab, nFf, nHead, nHeadKv, nEmbdHeadK, nEmbdHeadV } = hp
  const nEmbdQ = nEmbdHeadK * nHead
  const nEmbdKGqa = nEmbdHeadK * nHeadKv
  const nEmbdVGqa = nEmbdHeadV * nHeadKv
  if (ctx.getTensor('blk.0.ffn_gate_inp.weight')) throw new ModelFormatError('model: mixture-of-experts models are not supported')
  const tokEmbd = need('token_embd.weight', [nEmbd, nVocab])
  const ropeFreqs = opt('rope_freqs.weight', [hp.rope.nDims / 2])
  const layers: LayerWeights[] = []
  for (let i = 0; i < hp.nLayer; i++) {
    const b = (n: string) => `blk.${i}.${n}`
    // qwen2 always has q/k/v biases; llama may.
    const bias = hp.arch === 'qwen2' ? need : opt
    layers.push({
      attnNorm: need(b('attn_norm.weight'), [nEmbd]),
      wq: need(b('attn_q.weight'), [nEmbd, nEmbdQ]),
      wk: need(b('attn_k.weight'), [nEmbd, nEmbdKGqa]),
      wv: need(b('attn_v.weight'), [nEmbd, nEmbdVGqa]),
      wo: need(b('attn_output.weight'), [nEmbdQ, nEmbd]),
      bq: bias(b('attn_q.bias'), [nEmbdQ]),
      bk: bias(b('attn_k.bias'), [nEmbdKGqa]),
      bv: bias(b('attn_v.bias'), [nEmbdVGqa]),
      bo: opt(b('attn_output.bias'), [nEmbd]),
      ffnNorm: need(b('ffn_norm.weight'), [nEmbd]),
      ffnGate: need(b('ffn_gate.weight'), [nEmbd, nFf]),
      ffnDown: need(b('ffn_down.weight'), [nFf, nEmbd]),
      ffnUp: need(b('ffn_up.weight'), [nEmbd, nFf]),
      ffnGateB: opt(b('ffn_gate.bias'), [nFf]),
      ffnDownB: opt(b('ffn_down.bias'), [nEmbd]),
      ffnUpB: opt(b('ffn_up.bias'), [nFf]),
      ropeFreqs,
    })
  }
  const weights: ModelWeights = {
    tokEmbd,
    outputNorm: need('output_norm.weight', [nEmbd]),
    output: opt('output.weight', [nEmbd, nVocab]) ?? tokEmbd,
    layers,
    size: infos.reduce((s, i) => s + i.size, 0),
    nParams: infos.reduce((s, i) => s + i.ne.reduce((a, b) => a * b, 1), 0),
  }
  return { ctx, weights }
}

/** Map or upload the weights into `backend`, off the event loop. */
export async function loadWeights(
  g: Gguf,
  ctx: WeftContext,
  backend: Backend,
  options: { mmap?: boolean; prefetch?: boolean },
  onProgress?: LoadProgress,
): Promise<BackendBuffer | null> {
  // A throwing callback must not turn into an uncaught exception on the JS thread.
  const report = onProgress
    ? (done: number, total: number) => {
        try {
          onProgress(total > 0 ? done / total : 1)
        } catch {
          /* the user's callback failed; loading goes on */
        }
      }
    : undefined
  return g.loadWeights(ctx, backend, options, report)
}
