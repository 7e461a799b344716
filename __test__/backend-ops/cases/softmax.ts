// Attention-score ops: DIAG_MASK_INF, SOFT_MAX.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_DIAG_MASK_INF
export class TestDiagMaskInf extends TestCase {
  readonly op = 'DIAG_MASK_INF';
  constructor(readonly type: GgmlType = 'f32', readonly ne: Ne4 = [10, 10, 3, 2], readonly nPast = 5) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, n_past: this.nPast };
  }
  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: true });
    return named(ctx.diagMaskInf(a, this.nPast), 'out');
  }
}

// GGML_OP_SOFT_MAX
export class TestSoftMax extends TestCase {
  readonly op = 'SOFT_MAX';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [10, 5, 4, 3],
    readonly mask = false,
    readonly scale = 1.0,
    readonly maxBias = 0.0,
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, mask: this.mask, scale: float(this.scale), max_bias: float(this.maxBias) };
  }
  // the 1024 test with bias occasionally fails:
  // SOFT_MAX(type=f32,ne=[1024,16,1,1],mask=1,scale=1.000000,max_bias=8.000000): [SOFT_MAX] NMSE = 0.000000103 > 0.000000100 FAIL
  maxNmseErr(): number {
    return 1e-6;
  }
  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: true });
    const mask = this.mask ? named(this.newTensor2d(ctx, 'f32', this.ne[0], this.ne[1]), 'mask') : null;
    return named(ctx.softMaxExt(a, mask, this.scale, this.maxBias), 'out');
  }
  gradPrecise(): boolean {
    return true;
  }
}
