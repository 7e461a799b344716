// Ops that tile, join or grow tensors: REPEAT, CONCAT, PAD.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_REPEAT
export class TestRepeat extends TestCase {
  readonly op = 'REPEAT';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [10, 5, 4, 3],
    readonly nr: Ne4 = [2, 2, 2, 2],
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, nr: this.nr };
  }
  opSize(t: Tensor): number {
    return t.nbytes * 2;
  }
  buildGraph(ctx: Context): Tensor {
    const [n0, n1, n2, n3] = this.ne;
    const [r0, r1, r2, r3] = this.nr;
    const target = named(this.newTensor4d(ctx, this.type, n0 * r0, n1 * r1, n2 * r2, n3 * r3), 'target');
    const src = this.newTensor(ctx, this.type, this.ne);
    src.setParam();
    named(src, 'src');
    return named(ctx.repeat(src, target), 'out');
  }
}

// GGML_OP_CONCAT
export class TestConcat extends TestCase {
  readonly op = 'CONCAT';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [10, 5, 5, 5],
    readonly neBD = 5,
    readonly dim = 2,
    readonly v = 0, // view (1 << 0: non-cont a, 1 << 1: non-cont b)
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne_a: this.neA, ne_b_d: this.neBD, dim: this.dim, v: this.v };
  }
  buildGraph(ctx: Context): Tensor {
    const neB = [...this.neA] as [number, number, number, number];
    neB[this.dim] = this.neBD;
    const a = this.input(ctx, this.type, this.neA, 'a', { grow: this.v & 1 ? [2, 4, 3, 1] : null });
    const b = this.input(ctx, this.type, neB, 'b', { grow: this.v & 2 ? [3, 2, 4, 1] : null });
    return named(ctx.concat(a, b, this.dim), 'out');
  }
}

// GGML_OP_PAD
export class TestPad extends TestCase {
  readonly op = 'PAD';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [512, 512, 1, 1],
    readonly pad0 = 1,
    readonly pad1 = 1,
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne_a: this.neA, pad_0: this.pad0, pad_1: this.pad1 };
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.neA), 'a');
    return named(ctx.pad(a, this.pad0, this.pad1, 0, 0), 'out');
  }
}
