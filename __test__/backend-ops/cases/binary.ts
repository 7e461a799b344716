// Broadcasting binary ops and scalar arithmetic: ADD, MUL, DIV (test_bin_bcast), ADD1, SCALE.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import type { Rng } from '../rng.js';
import { initTensorUniform } from '../tensor-data.js';
import { named, TestCase, TypeNeCase, type Ne4 } from '../test-case.js';

/** The binary op of test_bin_bcast (ggml_add, ggml_mul or ggml_div). */
export type BinOp = 'ADD' | 'MUL' | 'DIV';

const nelements = (ne: Ne4): number => ne[0] * ne[1] * ne[2] * ne[3];

// GGML_OP_ADD, GGML_OP_MUL, GGML_OP_DIV
export class TestBinBcast extends TestCase {
  constructor(
    readonly binOp: BinOp,
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [10, 10, 1, 1],
    readonly nr: Ne4 = [1, 2, 1, 1],
  ) {
    super();
  }

  get op(): string {
    return this.binOp;
  }

  vars(): Vars {
    return { type: this.type, ne: this.ne, nr: this.nr };
  }

  opSize(t: Tensor): number {
    return t.nbytes * 3;
  }

  buildGraph(ctx: Context): Tensor {
    const [n0, n1, n2, n3] = this.ne;
    const [r0, r1, r2, r3] = this.nr;
    const a = named(this.newTensor4d(ctx, this.type, n0 * r0, n1 * r1, n2 * r2, n3 * r3), 'a');
    const b = named(this.newTensor(ctx, this.type, this.ne), 'b');
    // The backward pass supports broadcasting only for GGML_ADD:
    if (this.binOp === 'ADD' || a.sameShape(b)) {
      a.setParam();
      b.setParam();
    }
    const f = { ADD: ctx.add, MUL: ctx.mul, DIV: ctx.div }[this.binOp];
    return named(f.call(ctx, a, b), 'out');
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    // MUL and DIV have numerical issues around zero:
    const [min, max] = this.binOp === 'ADD' ? [-1, 1] : [0.9, 1.1];
    for (const t of ctx.tensors()) initTensorUniform(t, rng, min, max);
  }

  gradEps(): number {
    return Math.fround(Math.fround(0.1) * (this.binOp === 'MUL' ? nelements(this.ne) : 1));
  }

  gradPrecise(): boolean {
    return this.binOp === 'DIV';
  }

  maxMaaErr(): number {
    return this.binOp === 'ADD' ? 1e-4 : 1e-3;
  }
}

// GGML_OP_ADD1
export class TestAdd1 extends TypeNeCase {
  readonly op = 'ADD1';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [10, 5, 4, 3]) {
    super(type, ne);
  }
  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: true });
    const b = named(this.newTensor1d(ctx, this.type, 1), 'b');
    // ggml_set_param(ctx, b); // TODO in ggml: implement
    return named(ctx.add1(a, b), 'out');
  }
  gradEps(): number {
    return Math.fround(Math.fround(0.1) * nelements(this.ne));
  }
}

// GGML_OP_SCALE
export class TestScale extends TestCase {
  readonly op = 'SCALE';
  constructor(readonly type: GgmlType = 'f32', readonly ne: Ne4 = [10, 10, 10, 10], readonly scale = 2.0) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, scale: float(this.scale) };
  }
  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: true });
    return named(ctx.scale(a, this.scale), 'out');
  }
}
