// Whole model blocks: test_llm (shared helpers), LLAMA, FALCON. ggml keeps these out of both
// case lists ("disabled to save execution time, but they can be handy for debugging");
// makeTestCasesLlm() lists them for the CLI's --llm flag.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { rowSize } from '../ggml-types.js';
import type { Rng } from '../rng.js';
import { initTensorUniform, setI32 } from '../tensor-data.js';
import { TestCase } from '../test-case.js';

type NormType = 'norm' | 'rms';

interface LlamaHparams {
  nVocab: number;
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  nRot: number;
  nEmbdHead: number; // dimension of values (d_v)
  nFf: number;
  fNormEps: number;
  fNormRmsEps: number;
  nTokens: number; // batch
}

const N_LAYER = 1;
const N_CTX = 512; // user-specified context size
const N_CTX_ORIG = N_CTX;
const N_KV = 32; // size of KV cache to consider (n_kv <= n_ctx)
const KV_HEAD = 1; // index of where we store new KV data in the cache
const F16_SIZE = 2;

/** The RoPE settings both model cases use (their static constexpr members). */
const ROPE = { nCtxOrig: N_CTX_ORIG, freqBase: 10000, freqScale: 1, extFactor: 0, attnFactor: 1, betaFast: 32, betaSlow: 1 };

// LLM base class
abstract class TestLlm extends TestCase {
  constructor(readonly hp: LlamaHparams) {
    super();
  }

  /** Dimension of key embeddings across all k-v heads. */
  get nEmbdGqa(): number {
    return this.hp.nEmbdHead * this.hp.nHeadKv;
  }

  vars(): Vars {
    return { n_tokens: this.hp.nTokens };
  }

  opDesc(): string {
    return this.op;
  }

  maxNmseErr(): number {
    return 2e-3;
  }

  llmBuildNorm(ctx: Context, cur: Tensor, mw: Tensor, mb: Tensor | null, type: NormType): Tensor {
    cur = type === 'norm' ? ctx.norm(cur, this.hp.fNormEps) : ctx.rmsNorm(cur, this.hp.fNormRmsEps);
    cur = ctx.mul(cur, mw);
    if (mb) cur = ctx.add(cur, mb);
    return cur;
  }

  llmBuildKvStore(ctx: Context, kL: Tensor, vL: Tensor, kCur: Tensor, vCur: Tensor): void {
    const { nTokens } = this.hp;
    const gqa = this.nEmbdGqa;
    // compute the transposed [n_tokens, n_embd] V matrix
    const vCurT = ctx.transpose(ctx.reshape2d(vCur, gqa, nTokens));
    const kCacheView = ctx.view1d(kL, nTokens * gqa, rowSize(kL.type, gqa) * KV_HEAD);
    const vCacheView = ctx.view2d(vL, nTokens, gqa, N_CTX * F16_SIZE, KV_HEAD * F16_SIZE);
    // important: storing RoPE-ed version of K in the KV cache!
    ctx.cpy(kCur, kCacheView);
    ctx.cpy(vCurT, vCacheView);
  }

  llmBuildKqv(ctx: Context, kL: Tensor, vL: Tensor, qCur: Tensor, kqMask: Tensor, kqScale: number): Tensor {
    const { nEmbdHead, nHeadKv, nHead, nTokens, nEmbd } = this.hp;
    const q = ctx.permute(qCur, 0, 2, 1, 3);
    const k = ctx.view3d(kL, nEmbdHead, N_KV, nHeadKv, rowSize(kL.type, this.nEmbdGqa), rowSize(kL.type, nEmbdHead), 0);
    let kq = ctx.mulMat(k, q);
    kq = ctx.softMaxExt(kq, kqMask, kqScale, 0);
    // split cached v into n_head heads
    const v = ctx.view3d(vL, N_KV, nEmbdHead, nHeadKv, F16_SIZE * N_CTX, F16_SIZE * N_CTX * nEmbdHead, 0);
    const kqv = ctx.mulMat(v, kq);
    const kqvMerged = ctx.permute(kqv, 0, 2, 1, 3);
    let cur = ctx.cont2d(kqvMerged, nEmbdHead * nHead, nTokens);
    const wo = this.newTensor2d(ctx, 'q4_0', nEmbd, nEmbd);
    cur = ctx.mulMat(wo, cur);
    return cur;
  }

  /** inpL, inp_pos, KQ_mask and the K/V caches every model block starts with. */
  protected inputs(ctx: Context): { inpL: Tensor; inpPos: Tensor; kqMask: Tensor; kL: Tensor; vL: Tensor } {
    const { nEmbd, nTokens } = this.hp;
    const inpL = this.newTensor2d(ctx, 'f32', nEmbd, nTokens);
    // inp_pos - contains the positions
    const inpPos = this.newTensor1d(ctx, 'i32', nTokens);
    // KQ_mask (mask for 1 head, it will be broadcasted to all heads)
    const kqMask = this.newTensor3d(ctx, 'f16', N_KV, nTokens, 1);
    const kL = this.newTensor1d(ctx, 'f16', 1638400);
    const vL = this.newTensor1d(ctx, 'f16', 1638400);
    return { inpL, inpPos, kqMask, kL, vL };
  }

  /** The output norm (with a bias for LLM_NORM, as falcon has) and the lm_head product. */
  protected lmHead(ctx: Context, cur: Tensor, norm: NormType, type: GgmlType): Tensor {
    const outputNorm = this.newTensor1d(ctx, 'f32', this.hp.nEmbd);
    const outputNormB = norm === 'norm' ? this.newTensor1d(ctx, 'f32', this.hp.nEmbd) : null;
    cur = this.llmBuildNorm(ctx, cur, outputNorm, outputNormB, norm);
    // lm_head
    const output = this.newTensor2d(ctx, type, this.hp.nEmbd, this.hp.nVocab);
    return ctx.mulMat(output, cur);
  }

  protected kqScale(): number {
    return Math.fround(1 / Math.fround(Math.sqrt(this.hp.nEmbdHead)));
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    for (const t of ctx.tensors()) {
      if (t.type === 'i32') {
        // pos
        const data = new Int32Array(this.hp.nTokens);
        for (let i = 0; i < data.length; i++) data[i] = rng.rand() % N_CTX;
        setI32(t, data);
      } else {
        initTensorUniform(t, rng);
      }
    }
  }
}

// Llama
export class TestLlama extends TestLlm {
  readonly op = 'LLAMA';
  constructor(nTokens = 1) {
    super({
      nVocab: 32000,
      nEmbd: 3200,
      nHead: 32,
      nHeadKv: 32,
      nRot: 100,
      nEmbdHead: 100,
      nFf: 8640,
      fNormEps: 0,
      fNormRmsEps: 1e-5,
      nTokens,
    });
  }

  buildGraph(ctx: Context): Tensor {
    const hp = this.hp;
    const inputs = this.inputs(ctx);
    const { inpPos, kqMask, kL, vL } = inputs;
    let inpL = inputs.inpL;
    let cur: Tensor;

    for (let il = 0; il < N_LAYER; ++il) {
      const inpSA = inpL;

      // norm
      const attnNorm = this.newTensor1d(ctx, 'f32', hp.nEmbd);
      cur = this.llmBuildNorm(ctx, inpL, attnNorm, null, 'rms');

      // self-attention
      {
        const wq = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, hp.nEmbd);
        const wk = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, this.nEmbdGqa);
        const wv = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, this.nEmbdGqa);

        // compute Q and K and RoPE them
        let qCur = ctx.mulMat(wq, cur);
        let kCur = ctx.mulMat(wk, cur);
        const vCur = ctx.mulMat(wv, cur);

        const rope = { ...ROPE, nDims: hp.nRot, mode: 0 as const };
        qCur = ctx.ropeExt(ctx.reshape3d(qCur, hp.nEmbdHead, hp.nHead, hp.nTokens), inpPos, null, rope);
        kCur = ctx.ropeExt(ctx.reshape3d(kCur, hp.nEmbdHead, hp.nHeadKv, hp.nTokens), inpPos, null, rope);

        this.llmBuildKvStore(ctx, kL, vL, kCur, vCur);
        cur = this.llmBuildKqv(ctx, kL, vL, qCur, kqMask, this.kqScale());
      }

      const ffnInp = ctx.add(cur, inpSA);

      // feed-forward network
      const ffnNorm = this.newTensor1d(ctx, 'f32', hp.nEmbd);
      cur = this.llmBuildNorm(ctx, ffnInp, ffnNorm, null, 'rms');

      const ffnGate = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, hp.nFf);
      const ffnDown = this.newTensor2d(ctx, 'q4_0', hp.nFf, hp.nEmbd);
      const ffnUp = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, hp.nFf);
      const tmp = ctx.mulMat(ffnUp, cur);
      cur = ctx.mulMat(ffnGate, cur);
      cur = ctx.silu(cur);
      cur = ctx.mul(cur, tmp);
      cur = ctx.mulMat(ffnDown, cur);

      cur = ctx.add(cur, ffnInp);

      // input for next layer
      inpL = cur;
    }

    cur = inpL;
    return this.lmHead(ctx, cur, 'rms', 'q4_0');
  }
}

// Falcon
export class TestFalcon extends TestLlm {
  readonly op = 'FALCON';
  constructor(nTokens = 1) {
    super({
      nVocab: 32000,
      nEmbd: 3200,
      nHead: 50,
      nHeadKv: 1,
      nRot: 64,
      nEmbdHead: 64,
      nFf: 8640,
      fNormEps: 1e-5,
      fNormRmsEps: 0,
      nTokens,
    });
  }

  buildGraph(ctx: Context): Tensor {
    const hp = this.hp;
    const gqa = this.nEmbdGqa;
    const inputs = this.inputs(ctx);
    const { inpPos, kqMask, kL, vL } = inputs;
    let inpL = inputs.inpL;
    let cur: Tensor;

    for (let il = 0; il < N_LAYER; ++il) {
      // norm
      const attnNormW = this.newTensor1d(ctx, 'f32', hp.nEmbd);
      const attnNormB = this.newTensor1d(ctx, 'f32', hp.nEmbd);
      const attnNorm = this.llmBuildNorm(ctx, inpL, attnNormW, attnNormB, 'norm');

      // self-attention
      {
        cur = attnNorm;
        const wqkv = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, hp.nEmbd + 2 * gqa);
        cur = ctx.mulMat(wqkv, cur);

        const f = 4; // sizeof(float)
        let qCur = ctx.cont(ctx.view2d(cur, hp.nEmbd, hp.nTokens, cur.nb[1]!, 0 * f * hp.nEmbd));
        let kCur = ctx.cont(ctx.view2d(cur, gqa, hp.nTokens, cur.nb[1]!, 1 * f * hp.nEmbd));
        const vCur = ctx.cont(ctx.view2d(cur, gqa, hp.nTokens, cur.nb[1]!, 1 * f * (hp.nEmbd + gqa)));

        qCur = ctx.reshape3d(qCur, hp.nEmbdHead, hp.nHead, hp.nTokens);
        kCur = ctx.reshape3d(kCur, hp.nEmbdHead, hp.nHeadKv, hp.nTokens);

        // using mode = 2 for neox mode
        const rope = { ...ROPE, nDims: hp.nRot, mode: 2 as const };
        qCur = ctx.ropeExt(qCur, inpPos, null, rope);
        kCur = ctx.ropeExt(kCur, inpPos, null, rope);

        this.llmBuildKvStore(ctx, kL, vL, kCur, vCur);
        cur = this.llmBuildKqv(ctx, kL, vL, qCur, kqMask, this.kqScale());
      }

      const ffnInp = cur;

      // feed forward
      {
        const ffnUp = this.newTensor2d(ctx, 'q4_0', hp.nEmbd, hp.nFf);
        const ffnDown = this.newTensor2d(ctx, 'q4_0', hp.nFf, hp.nEmbd);
        cur = attnNorm;
        cur = ctx.mulMat(ffnUp, cur);
        cur = ctx.gelu(cur);
        cur = ctx.mulMat(ffnDown, cur);
      }

      cur = ctx.add(cur, ffnInp);
      cur = ctx.add(cur, inpL);

      // input for next layer
      inpL = cur;
    }

    cur = inpL;
    return this.lmHead(ctx, cur, 'norm', 'q8_0');
  }
}
