// Matrix products: MUL_MAT, MUL_MAT_ID, OUT_PROD.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { isQuantized } from '../ggml-types.js';
import type { Rng } from '../rng.js';
import { initTensorUniform, setI32 } from '../tensor-data.js';
import { isViewOp, named, TestCase } from '../test-case.js';

type Pair = readonly [number, number];
type Perm = readonly [number, number, number, number];

/** MUL_MAT and OUT_PROD: operand types, m, n, k, the batch dims bs (dims 3 and 4); NMSE bound 5e-4. */
abstract class Product extends TestCase {
  constructor(
    readonly typeA: GgmlType,
    readonly typeB: GgmlType,
    readonly m: number,
    readonly n: number,
    readonly k: number,
    readonly bs: Pair,
  ) {
    super();
  }

  maxNmseErr(): number {
    return 5e-4;
  }
}

// GGML_OP_MUL_MAT
export class TestMulMat extends Product {
  readonly op = 'MUL_MAT';
  constructor(
    typeA: GgmlType = 'f32',
    typeB: GgmlType = 'f32',
    m = 32,
    n = 32,
    k = 32,
    bs: Pair = [10, 10],
    readonly nr: Pair = [2, 2], // repeat in dims 3 and 4
    readonly per: Perm = [0, 1, 2, 3], // permutation of dimensions
  ) {
    super(typeA, typeB, m, n, k, bs);
  }

  vars(): Vars {
    const { m, n, k, bs, nr, per } = this;
    return { type_a: this.typeA, type_b: this.typeB, m, n, k, bs, nr, per };
  }

  opFlops(): number {
    return 2 * this.m * this.n * this.k * this.bs[0] * this.nr[0] * this.bs[1] * this.nr[1];
  }

  buildGraph(ctx: Context): Tensor {
    // C^T = A * B^T: (k, m) * (k, n) => (m, n)
    const { m, n, k, bs, nr, per } = this;
    let a: Tensor;
    let b: Tensor;
    const npermuted = Number(per[0] !== 0) + Number(per[1] !== 1) + Number(per[2] !== 2) + Number(per[3] !== 3);
    if (npermuted > 0) {
      if (npermuted !== 2) throw new Error('MUL_MAT: a permutation swaps exactly 2 dims');
      if ((isQuantized(this.typeA) || isQuantized(this.typeB)) && per[0] !== 0) {
        throw new Error('MUL_MAT: quantized operands cannot have dim 0 permuted');
      }
      // Create tensors with the permuted dimensions, then permute them back to the dimensions given by m,n,k.
      const neA = [k, m, bs[0], bs[1]];
      const neB = [k, n, bs[0] * nr[0], bs[1] * nr[1]];
      a = this.newTensor4d(ctx, this.typeA, neA[per[0]]!, neA[per[1]]!, neA[per[2]]!, neA[per[3]]!);
      b = this.newTensor4d(ctx, this.typeB, neB[per[0]]!, neB[per[1]]!, neB[per[2]]!, neB[per[3]]!);
      a.setParam();
      b.setParam();
      named(a, 'a');
      named(b, 'b');
      a = named(ctx.permute(a, per[0], per[1], per[2], per[3]), 'a_permuted');
      b = named(ctx.permute(b, per[0], per[1], per[2], per[3]), 'b_permuted');
    } else {
      a = this.newTensor4d(ctx, this.typeA, k, m, bs[0], bs[1]);
      b = this.newTensor4d(ctx, this.typeB, k, n, bs[0] * nr[0], bs[1] * nr[1]);
      a.setParam();
      b.setParam();
      named(a, 'a');
      named(b, 'b');
    }
    return named(ctx.mulMat(a, b), 'out');
  }
}

// GGML_OP_MUL_MAT_ID
export class TestMulMatId extends TestCase {
  readonly op = 'MUL_MAT_ID';
  constructor(
    readonly typeA: GgmlType = 'f32',
    readonly typeB: GgmlType = 'f32',
    readonly nMats = 8,
    readonly nUsed = 2,
    readonly b = false, // broadcast b matrix
    readonly m = 32,
    readonly n = 32,
    readonly k = 32,
  ) {
    super();
    if (nUsed > nMats) throw new Error('MUL_MAT_ID: n_used <= n_mats');
  }

  vars(): Vars {
    const { b, m, n, k } = this;
    return { type_a: this.typeA, type_b: this.typeB, n_mats: this.nMats, n_used: this.nUsed, b, m, n, k };
  }

  maxNmseErr(): number {
    return 5e-4;
  }

  opFlops(): number {
    return 2 * this.m * this.k * this.n * this.nUsed;
  }

  buildGraph(ctx: Context): Tensor {
    // C^T = A * B^T: (k, m) * (k, n) => (m, n)
    const as = named(this.newTensor3d(ctx, this.typeA, this.k, this.m, this.nMats), 'as');
    let ids = named(this.newTensor2d(ctx, 'i32', this.nMats, this.n), 'ids');
    if (this.nUsed !== this.nMats) {
      ids = named(ctx.view2d(ids, this.nUsed, this.n, ids.nb[1]!, 0), 'view_of_ids');
    }
    const b = named(this.newTensor3d(ctx, this.typeB, this.k, this.b ? 1 : this.nUsed, this.n), 'b');
    return named(ctx.mulMatId(as, b, ids), 'out');
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    for (const t of ctx.tensors()) {
      if (t.type === 'i32') {
        if (isViewOp(t.op)) continue;
        // ids
        for (let r = 0; r < t.nrows; r++) {
          const data = new Int32Array(t.ne[0]!);
          for (let i = 0; i < data.length; i++) data[i] = i % this.nMats;
          rng.shuffle(data);
          setI32(t, data, r * t.nb[1]!);
        }
      } else {
        initTensorUniform(t, rng);
      }
    }
  }
}

// GGML_OP_OUT_PROD
export class TestOutProd extends Product {
  readonly op = 'OUT_PROD';
  constructor(
    typeA: GgmlType = 'f32',
    typeB: GgmlType = 'f32',
    m = 32,
    n = 32,
    k = 32,
    bs: Pair = [10, 10],
    readonly transB = false,
  ) {
    super(typeA, typeB, m, n, k, bs);
  }

  vars(): Vars {
    const { m, n, k, bs } = this;
    return { type_a: this.typeA, type_b: this.typeB, m, n, k, bs, trans_b: this.transB };
  }

  buildGraph(ctx: Context): Tensor {
    const { m, n, k, bs } = this;
    const a = named(this.newTensor4d(ctx, this.typeA, m, k, bs[0], bs[1]), 'a');
    let b: Tensor;
    if (this.transB) {
      b = this.newTensor4d(ctx, this.typeB, k, n, bs[0], bs[1]);
      b = ctx.transpose(b);
    } else {
      b = this.newTensor4d(ctx, this.typeB, n, k, bs[0], bs[1]);
    }
    named(b, 'b');
    return named(ctx.outProd(a, b), 'out');
  }
}
