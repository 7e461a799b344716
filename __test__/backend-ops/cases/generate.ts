// Ops that make values from parameters: ARANGE, TIMESTEP_EMBEDDING.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_ARANGE
export class TestArange extends TestCase {
  readonly op = 'ARANGE';
  constructor(readonly type: GgmlType = 'f32', readonly start = 0, readonly stop = 10, readonly step = 1) {
    super();
  }
  vars(): Vars {
    return { type: this.type, start: float(this.start), stop: float(this.stop), step: float(this.step) };
  }
  buildGraph(ctx: Context): Tensor {
    return named(ctx.arange(this.start, this.stop, this.step), 'out');
  }
}

// GGML_OP_TIMESTEP_EMBEDDING
export class TestTimestepEmbedding extends TestCase {
  readonly op = 'TIMESTEP_EMBEDDING';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [2, 1, 1, 1],
    readonly dim = 320,
    readonly maxPeriod = 10000,
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne_a: this.neA, dim: this.dim, max_period: this.maxPeriod };
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.neA), 'a');
    return named(ctx.timestepEmbedding(a, this.dim, this.maxPeriod), 'out');
  }
}
