// Normalizations: NORM, RMS_NORM, GROUP_NORM.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_NORM
export class TestNorm extends TestCase {
  readonly op: string = 'NORM';
  constructor(readonly type: GgmlType = 'f32', readonly ne: Ne4 = [64, 5, 4, 3], readonly eps = 1e-6) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, eps: float(this.eps) };
  }
  /** Whether a is a parameter (ggml checks gradients of RMS_NORM, not of NORM). */
  protected readonly param: boolean = false;
  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: this.param });
    return named(this.norm(ctx, a), 'out');
  }
  protected norm(ctx: Context, a: Tensor): Tensor {
    return ctx.norm(a, this.eps);
  }
}

// GGML_OP_RMS_NORM
export class TestRmsNorm extends TestNorm {
  readonly op: string = 'RMS_NORM';
  protected readonly param: boolean = true;
  protected norm(ctx: Context, a: Tensor): Tensor {
    return ctx.rmsNorm(a, this.eps);
  }
  gradPrecise(): boolean {
    return true;
  }
}

// GGML_OP_GROUP_NORM
export class TestGroupNorm extends TestCase {
  readonly op = 'GROUP_NORM';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [64, 64, 320, 1],
    readonly numGroups = 32,
    readonly eps = 1e-6, // not part of the name, as in ggml
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, num_groups: this.numGroups };
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.ne), 'a');
    return named(ctx.groupNorm(a, this.numGroups, this.eps), 'out');
  }
}
