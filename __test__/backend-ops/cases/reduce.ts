// Reductions: SUM, SUM_ROWS.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { named, TypeNeCase, type Ne4 } from '../test-case.js';

// GGML_OP_SUM
export class TestSum extends TypeNeCase {
  readonly op: string = 'SUM';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [10, 5, 4, 3]) {
    super(type, ne);
  }
  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: true });
    return named(this.reduce(ctx, a), 'out');
  }
  protected reduce(ctx: Context, a: Tensor): Tensor {
    return ctx.sum(a);
  }
  gradEps(): number {
    const [n0, n1, n2, n3] = this.ne;
    return Math.fround(Math.fround(0.1) * Math.fround(Math.sqrt(Math.fround(n0 * n1 * n2 * n3))));
  }
}

// GGML_OP_SUM_ROWS
export class TestSumRows extends TestSum {
  readonly op: string = 'SUM_ROWS';
  protected reduce(ctx: Context, a: Tensor): Tensor {
    return ctx.sumRows(a);
  }
  gradEps(): number {
    return Math.fround(1e-1);
  }
}
