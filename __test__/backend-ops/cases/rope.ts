// Rotary position embedding: ROPE (ggml_rope_ext).

import type { Context, GgmlType, RopeOptions, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import type { Rng } from '../rng.js';
import { initTensorUniform, setI32 } from '../tensor-data.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

type RopeMode = NonNullable<RopeOptions['mode']>;

// GGML_OP_ROPE
export class TestRope extends TestCase {
  readonly op = 'ROPE';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [10, 5, 3, 1],
    readonly nDims = 10,
    readonly mode = 0,
    readonly nCtx = 512, // used to generate positions
    readonly fs = 1.0, // freq_scale
    readonly ef = 0.0, // ext_factor
    readonly af = 0.0, // attn_factor
    readonly ff = false, // frequency factors
    readonly v = 0, // view (1: non-contiguous a)
  ) {
    super();
  }

  vars(): Vars {
    const { nDims, mode, nCtx, fs, ef, af, ff, v } = this;
    return {
      type: this.type,
      ne_a: this.neA,
      n_dims: nDims,
      mode,
      n_ctx: nCtx,
      fs: float(fs),
      ef: float(ef),
      af: float(af),
      ff,
      v,
    };
  }

  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.neA, 'a', { param: true, grow: this.v & 1 ? [2, 4, 3, 1] : null });
    const pos = named(this.newTensor1d(ctx, 'i32', this.neA[2]), 'pos');
    const freq = this.ff ? named(this.newTensor1d(ctx, 'f32', Math.trunc(this.nDims / 2)), 'freq') : null;
    const out = ctx.ropeExt(a, pos, freq, {
      nDims: this.nDims,
      mode: this.mode as RopeMode, // an int in ggml's struct; the lists use 0 and 2
      nCtxOrig: 0,
      freqBase: 10000,
      freqScale: this.fs,
      extFactor: this.ef,
      attnFactor: this.af,
      betaFast: 1,
      betaSlow: 1,
    });
    return named(out, 'out');
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    for (const t of ctx.tensors()) {
      if (t.type === 'i32') {
        // pos
        const data = new Int32Array(this.neA[2]);
        for (let i = 0; i < data.length; i++) data[i] = rng.rand() % this.nCtx;
        setI32(t, data);
      } else if (t.ne[0] === Math.trunc(this.nDims / 2)) {
        // frequency factors in the range [0.9f, 1.1f]
        initTensorUniform(t, rng, 0.9, 1.1);
      } else {
        initTensorUniform(t, rng);
      }
    }
  }

  maxMaaErr(): number {
    return 1e-3;
  }

  gradPrecise(): boolean {
    return true;
  }
}
