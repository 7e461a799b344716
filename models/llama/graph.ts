// The forward graph of a llama-family model, node for node as llama.cpp's build_llama (and
// build_qwen2, the same graph with q/k/v biases and GPT-NeoX rope) builds it at the reference
// commit, with llm_build_inp_embd, llm_build_norm, llm_build_kv_store, llm_build_kqv and
// llm_build_ffn (SwiGLU). Prompt batches and single-token steps share it: only n_tokens,
// n_kv (cells attended to) and kv_head (where the new K/V rows go) change.
import type { Context as WeftContext, Graph, Tensor } from 'weft-ml'
import type { HParams } from './hparams.js'
import { padTo, rowSize, type KvCache } from './kv-cache.js'
import type { LayerWeights, ModelWeights } from './weights.js'
import { weft } from './weft.js'

/** GGML_KQ_MASK_PAD: mask rows are padded to this many tokens. */
export const KQ_MASK_PAD = 32

export interface GraphShape {
  nTokens: number
  /** KV cells attended to (llama.cpp's kv_self.n). */
  nKv: number
  /** First cell the batch's K/V rows are written to. */
  kvHead: number
  /** Tokens whose logits are computed (the last n_outputs rows of inp_out_ids). */
  nOutputs: number
}

export interface BuiltGraph {
  ctx: WeftContext
  graph: Graph
  /** Inputs to fill after allocation: token ids, positions, the KQ mask, output rows. */
  tokens: Tensor
  pos: Tensor
  mask: Tensor
  outIds: Tensor
  /** [n_vocab, n_outputs]. */
  logits: Tensor
}

/** llama_model_max_nodes. */
export function maxNodes(nTensors: number): number {
  return Math.max(8192, nTensors * 5)
}

export function buildLlama(
  hp: HParams,
  w: ModelWeights,
  kv: KvCache,
  shape: GraphShape,
  flashAttn: boolean,
  nWeightTensors: number,
): BuiltGraph {
  const { nTokens, nKv, kvHead, nOutputs } = shape
  const nodes = maxNodes(nWeightTensors)
  const ctx = new weft.Context({
    memSize: weft.Context.tensorOverhead() * nodes + weft.Context.graphOverhead(nodes),
    noAlloc: true,
  })
  const gf = ctx.newGraphCustom(nodes)
  const named = (t: Tensor, name: string, il = -1) => {
    t.name = il >= 0 ? `${name}-${il}` : name
    return t
  }
  const nEmbdHead = hp.nEmbdHeadV
  const nEmbdKGqa = hp.nEmbdHeadK * hp.nHeadKv
  const nEmbdVGqa = hp.nEmbdHeadV * hp.nHeadKv
  const kqScale = 1 / Math.sqrt(nEmbdHead)
  const r = hp.rope
  const ropeOptions = {
    nDims: r.nDims,
    mode: r.mode,
    nCtxOrig: r.nCtxOrig,
    freqBase: r.freqBase,
    freqScale: r.freqScale,
    extFactor: r.extFactor,
    attnFactor: r.attnFactor,
    betaFast: r.betaFast,
    betaSlow: r.betaSlow,
  }
  const rmsNorm = (x: Tensor, weight: Tensor, name: string, il: number) => {
    const n = named(ctx.rmsNorm(x, hp.normRmsEps), 'norm', il)
    return named(ctx.mul(n, weight), name, il)
  }
  const linear = (wt: Tensor, x: Tensor, b: Tensor | undefined) => (b ? ctx.add(ctx.mulMat(wt, x), b) : ctx.mulMat(wt, x))

  // llm_build_inp_embd
  const tokens = named(ctx.newTensor1d('i32', nTokens), 'inp_tokens')
  tokens.setInput()
  let inpL = named(ctx.getRows(w.tokEmbd, tokens), 'inp_embd')
  // build_inp_pos, build_inp_KQ_mask
  const pos = named(ctx.newTensor1d('i32', nTokens), 'inp_pos')
  pos.setInput()
  const mask = named(ctx.newTensor2d('f32', nKv, padTo(nTokens, KQ_MASK_PAD)), 'KQ_mask')
  mask.setInput()
  const kqMask = flashAttn ? ctx.cast(mask, 'f16') : mask
  let outIds: Tensor | undefined

  for (let il = 0; il < hp.nLayer; il++) {
    const L: LayerWeights = w.layers[il]
    let inpSA = inpL
    let cur = rmsNorm(inpL, L.attnNorm, 'attn_norm', il)

    // self-attention
    const qCur = named(linear(L.wq, cur, L.bq), 'Qcur', il)
    const kCur = named(linear(L.wk, cur, L.bk), 'Kcur', il)
    const vCur = named(linear(L.wv, cur, L.bv), 'Vcur', il)
    const q = named(ctx.ropeExt(ctx.reshape3d(qCur, nEmbdHead, hp.nHead, nTokens), pos, L.ropeFreqs, ropeOptions), 'Qcur', il)
    const k = named(ctx.ropeExt(ctx.reshape3d(kCur, nEmbdHead, hp.nHeadKv, nTokens), pos, L.ropeFreqs, ropeOptions), 'Kcur', il)
    // llm_build_kv: these three go in together so the graph keeps them in this order.
    gf.buildForwardExpand(q)
    gf.buildForwardExpand(k)
    gf.buildForwardExpand(vCur)

    // llm_build_kv_store: RoPE-d K rows, and V (transposed without flash attention).
    const kView = named(ctx.view1d(kv.k[il], nTokens * nEmbdKGqa, rowSize(kv.typeK, nEmbdKGqa) * kvHead), 'k_cache_view', il)
    gf.buildForwardExpand(ctx.cpy(k, kView))
    const vElt = rowSize(kv.typeV, 1)
    const vView = flashAttn
      ? ctx.view1d(kv.v[il], nTokens * nEmbdVGqa, rowSize(kv.typeV, nEmbdVGqa) * kvHead)
      : ctx.view2d(kv.v[il], nTokens, nEmbdVGqa, kv.size * vElt, kvHead * vElt)
    named(vView, 'v_cache_view', il)
    gf.buildForwardExpand(ctx.cpy(flashAttn ? vCur : ctx.transpose(vCur), vView))

    // llm_build_kqv
    const qp = named(ctx.permute(q, 0, 2, 1, 3), 'q', il)
    const kc = named(
      ctx.view3d(kv.k[il], hp.nEmbdHeadK, nKv, hp.nHeadKv, rowSize(kv.typeK, nEmbdKGqa), rowSize(kv.typeK, hp.nEmbdHeadK), 0),
      'k',
      il,
    )
    if (flashAttn) {
      const vc = named(
        ctx.view3d(kv.v[il], hp.nEmbdHeadV, nKv, hp.nHeadKv, rowSize(kv.typeV, nEmbdVGqa), rowSize(kv.typeV, hp.nEmbdHeadV), 0),
        'v',
        il,
      )
      cur = ctx.flashAttnExt(qp, kc, vc, kqMask, kqScale, 0, 0)
      ctx.flashAttnExtSetPrec(cur, 'f32')
      cur = ctx.reshape2d(cur, hp.nEmbdHeadV * hp.nHead, nTokens)
    } else {
      let kq = named(ctx.mulMat(kc, qp), 'kq', il)
      ctx.mulMatSetPrec(kq, 'f32')
      kq = named(ctx.softMaxExt(kq, kqMask, kqScale, 0), 'kq_soft_max_ext', il)
      const vc = named(
        ctx.view3d(kv.v[il], nKv, hp.nEmbdHeadV, hp.nHeadKv, vElt * kv.size, vElt * kv.size * hp.nEmbdHeadV, 0),
        'v',
        il,
      )
      const kqv = named(ctx.mulMat(vc, kq), 'kqv', il)
      const merged = named(ctx.permute(kqv, 0, 2, 1, 3), 'kqv_merged', il)
      cur = named(ctx.cont2d(merged, hp.nEmbdHeadV * hp.nHead, nTokens), 'kqv_merged_cont', il)
    }
    gf.buildForwardExpand(cur)
    cur = named(linear(L.wo, cur, L.bo), 'kqv_out', il)

    if (il === hp.nLayer - 1) {
      // Skip the unused tokens' outputs from here on.
      outIds = named(ctx.newTensor1d('i32', nOutputs), 'inp_out_ids')
      outIds.setInput()
      cur = ctx.getRows(cur, outIds)
      inpSA = ctx.getRows(inpSA, outIds)
    }
    const ffnInp = named(ctx.add(cur, inpSA), 'ffn_inp', il)

    // llm_build_ffn with SiLU and a parallel gate: down(silu(gate(x)) * up(x))
    cur = rmsNorm(ffnInp, L.ffnNorm, 'ffn_norm', il)
    const up = named(linear(L.ffnUp, cur, L.ffnUpB), 'ffn_up', il)
    const gate = named(linear(L.ffnGate, cur, L.ffnGateB), 'ffn_gate', il)
    const act = named(ctx.silu(gate), 'ffn_silu', il)
    const par = named(ctx.mul(act, up), 'ffn_gate_par', il)
    cur = named(linear(L.ffnDown, par, L.ffnDownB), 'ffn_down', il)
    inpL = named(ctx.add(cur, ffnInp), 'l_out', il)
  }

  let cur = named(ctx.rmsNorm(inpL, hp.normRmsEps), 'norm')
  cur = named(ctx.mul(cur, w.outputNorm), 'result_norm')
  const logits = named(ctx.mulMat(w.output, cur), 'result_output')
  gf.buildForwardExpand(logits)
  return { ctx, graph: gf, tokens, pos, mask, outIds: outIds as Tensor, logits }
}
