// Copies and writes into windows: DUP, CPY, CONT, SET, ACC.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { named, TestCase, TypeNeCase, type Ne4 } from '../test-case.js';

const usesPermute = (p: Ne4): boolean => p[0] + p[1] + p[2] + p[3] > 0;

/** src = new param tensor "src", permuted (and named `permutedName`) when `permute` is used. */
function source(tc: TestCase, ctx: Context, type: GgmlType, ne: Ne4, permute: Ne4, permutedName: string): Tensor {
  let src = tc.newTensor(ctx, type, ne);
  src.setParam();
  named(src, 'src');
  if (usesPermute(permute)) {
    src = named(ctx.permute(src, permute[0], permute[1], permute[2], permute[3]), permutedName);
  }
  return src;
}

// GGML_OP_DUP
export class TestDup extends TestCase {
  readonly op = 'DUP';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [10, 10, 20, 1],
    readonly permute: Ne4 = [0, 0, 0, 0],
  ) {
    super();
  }
  vars(): Vars {
    const v: Vars = { type: this.type, ne: this.ne };
    if (usesPermute(this.permute)) v.permute = this.permute;
    return v;
  }
  buildGraph(ctx: Context): Tensor {
    const src = source(this, ctx, this.type, this.ne, this.permute, 'src_permuted');
    return named(ctx.dup(src), 'out');
  }
}

// GGML_OP_CPY
export class TestCpy extends TestCase {
  readonly op = 'CPY';
  constructor(
    readonly typeSrc: GgmlType = 'f32',
    readonly typeDst: GgmlType = 'f32',
    readonly ne: Ne4 = [10, 10, 10, 1],
    readonly permute: Ne4 = [0, 0, 0, 0],
  ) {
    super();
  }
  vars(): Vars {
    return { type_src: this.typeSrc, type_dst: this.typeDst, ne: this.ne, permute: this.permute };
  }
  maxNmseErr(): number {
    return 1e-6;
  }
  opSize(t: Tensor): number {
    return t.nbytes + t.src(0)!.nbytes;
  }
  buildGraph(ctx: Context): Tensor {
    const src = source(this, ctx, this.typeSrc, this.ne, this.permute, 'src_permuted');
    const dst = named(this.newTensor(ctx, this.typeDst, src.ne), 'dst');
    return named(ctx.cpy(src, dst), 'out');
  }
}

// GGML_OP_CONT
export class TestCont extends TypeNeCase {
  readonly op = 'CONT';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [10, 10, 10, 1]) {
    super(type, ne);
  }
  buildGraph(ctx: Context): Tensor {
    let src = this.newTensor(ctx, this.type, this.ne);
    src.setParam();
    named(src, 'src');
    src = named(ctx.transpose(src), 'src_transposed');
    return named(ctx.cont(src), 'out');
  }
}

// GGML_OP_SET
export class TestSet extends TestCase {
  readonly op = 'SET';
  constructor(
    readonly typeSrc: GgmlType = 'f32',
    readonly typeDst: GgmlType = 'f32',
    readonly ne: Ne4 = [6, 5, 4, 3],
    readonly dim = 1,
  ) {
    super();
  }
  vars(): Vars {
    return { type_src: this.typeSrc, type_dst: this.typeDst, ne: this.ne, dim: this.dim };
  }
  opSize(t: Tensor): number {
    return t.nbytes + t.src(0)!.nbytes;
  }
  buildGraph(ctx: Context): Tensor {
    const src = named(this.newTensor(ctx, this.typeSrc, this.ne), 'src');
    src.setParam();
    const neDst = [...this.ne];
    for (let i = 0; i < this.dim; ++i) neDst[i]! *= 2;
    const dst = named(this.newTensor(ctx, this.typeDst, neDst), 'dst');
    dst.setParam();
    let offset = 0;
    for (let i = 0; i < this.dim; ++i) offset += Math.trunc((neDst[i]! - this.ne[i]!) / 2) * dst.nb[i]!;
    // The backward pass requires setting a contiguous region:
    return named(ctx.set(dst, src, src.nb[1]!, src.nb[2]!, src.nb[3]!, offset), 'out');
  }
}

// GGML_OP_ACC
export class TestAcc extends TestCase {
  readonly op = 'ACC';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [256, 17, 1, 1],
    readonly neB: Ne4 = [256, 16, 1, 1],
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne_a: this.neA, ne_b: this.neB };
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.neA), 'a');
    a.setParam();
    const b = named(this.newTensor(ctx, this.type, this.neB), 'b');
    b.setParam();
    return named(ctx.acc(a, b, a.nb[1]!, a.nb[2]!, a.nb[3]!, b.nb[1]!), 'out');
  }
}
