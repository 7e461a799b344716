// Recurrent-model ops: SSM_CONV, SSM_SCAN (Mamba), RWKV_WKV (RWKV v6).

import type { Context, GgmlType, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_SSM_CONV
export class TestSsmConv extends TestCase {
  readonly op = 'SSM_CONV';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [10, 10, 10, 1],
    readonly neB: Ne4 = [3, 3, 1, 1],
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne_a: this.neA, ne_b: this.neB };
  }
  buildGraph(ctx: Context): Tensor {
    const a = this.newTensor(ctx, this.type, this.neA);
    const b = this.newTensor(ctx, this.type, this.neB);
    return ctx.ssmConv(a, b);
  }
}

// GGML_OP_SSM_SCAN
export class TestSsmScan extends TestCase {
  readonly op = 'SSM_SCAN';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly dState = 32,
    readonly dInner = 32,
    readonly nSeqTokens = 32,
    readonly nSeqs = 32,
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, d_state: this.dState, d_inner: this.dInner, n_seq_tokens: this.nSeqTokens, n_seqs: this.nSeqs };
  }
  buildGraph(ctx: Context): Tensor {
    const { type, dState, dInner, nSeqTokens, nSeqs } = this;
    const s = this.newTensor(ctx, type, [dState, dInner, nSeqs, 1]);
    const x = this.newTensor(ctx, type, [dInner, nSeqTokens, nSeqs, 1]);
    const dt = this.newTensor(ctx, type, [dInner, nSeqTokens, nSeqs, 1]);
    const A = this.newTensor(ctx, type, [dState, dInner, 1, 1]);
    const B = this.newTensor(ctx, type, [dState, nSeqTokens, nSeqs, 1]);
    const C = this.newTensor(ctx, type, [dState, nSeqTokens, nSeqs, 1]);
    return ctx.ssmScan(s, x, dt, A, B, C);
  }
}

// GGML_OP_RWKV_WKV
export class TestRwkvWkv extends TestCase {
  readonly op = 'RWKV_WKV';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly headCount = 32,
    readonly headSize = 64,
    readonly nSeqTokens = 32,
    readonly nSeqs = 32,
  ) {
    super();
  }
  vars(): Vars {
    return {
      type: this.type,
      head_count: this.headCount,
      head_size: this.headSize,
      n_seq_tokens: this.nSeqTokens,
      n_seqs: this.nSeqs,
    };
  }
  buildGraph(ctx: Context): Tensor {
    const { type, headCount, headSize } = this;
    const nTokens = this.nSeqTokens * this.nSeqs;
    const r = this.newTensor(ctx, type, [1, headSize, headCount, nTokens]);
    const k = this.newTensor(ctx, type, [headSize, 1, headCount, nTokens]);
    const v = this.newTensor(ctx, type, [1, headSize, headCount, nTokens]);
    const tf = this.newTensor(ctx, type, [headSize, headCount]);
    const td = this.newTensor(ctx, type, [1, headSize, headCount, nTokens]);
    const s = this.newTensor(ctx, type, [headSize * headSize * headCount, this.nSeqs]);
    return ctx.rwkvWkv(k, v, r, tf, td, s);
  }
}
