// Ops that pick, rank or count along rows: GET_ROWS, ARGMAX, COUNT_EQUAL, ARGSORT.

import type { Context, GgmlType, SortOrder, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import type { Rng } from '../rng.js';
import { initTensorUniform, setF32, setI32 } from '../tensor-data.js';
import { isViewOp, named, TestCase, TypeNeCase, type Ne4 } from '../test-case.js';

// GGML_OP_GET_ROWS
export class TestGetRows extends TestCase {
  readonly op = 'GET_ROWS';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly n = 10, // cols
    readonly m = 5, // rows
    readonly r = 3, // rows to get
    readonly b = 1, // batch size
    readonly v = false, // view (non-contiguous src1)
  ) {
    super();
  }

  vars(): Vars {
    return { type: this.type, n: this.n, m: this.m, r: this.r, b: this.b, v: this.v };
  }

  buildGraph(ctx: Context): Tensor {
    const inp = named(this.newTensor3d(ctx, this.type, this.n, this.m, this.b), 'in');
    let rows = named(this.newTensor2d(ctx, 'i32', this.r, this.b), 'rows');
    if (this.v) {
      rows = named(ctx.view2d(rows, Math.trunc(this.r / 2), this.b, rows.nb[1]!, 0), 'view_of_rows');
    }
    const gradSupported = inp.isMatrix() && rows.isVector();
    if (gradSupported) {
      inp.setParam();
      // rows is a constant input -> no gradients
    }
    return named(ctx.getRows(inp, rows), 'out');
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    for (const t of ctx.tensors()) {
      if (t.type === 'i32') {
        if (isViewOp(t.op)) continue;
        // rows
        const data = new Int32Array(this.r * this.b);
        for (let i = 0; i < data.length; i++) data[i] = rng.rand() % this.m;
        setI32(t, data);
      } else {
        initTensorUniform(t, rng);
      }
    }
  }
}

// GGML_OP_ARGMAX
export class TestArgmax extends TypeNeCase {
  readonly op = 'ARGMAX';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [10, 100, 1, 1]) {
    super(type, ne);
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.ne), 'a');
    return named(ctx.argmax(a), 'out');
  }
  maxNmseErr(): number {
    return 0;
  }
}

// GGML_OP_COUNT_EQUAL
export class TestCountEqual extends TypeNeCase {
  readonly op = 'COUNT_EQUAL';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [4, 500, 1, 1]) {
    super(type, ne);
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.ne), 'a');
    const aArgmax = named(ctx.argmax(a), 'a_argmax');
    named(this.newTensor(ctx, this.type, this.ne), 'b');
    // ggml takes the argmax of a twice here (b is created but unused); kept as it is.
    const bArgmax = named(ctx.argmax(a), 'b_argmax');
    return named(ctx.countEqual(aArgmax, bArgmax), 'out');
  }
  maxNmseErr(): number {
    return 0;
  }
}

// GGML_OP_ARGSORT
export class TestArgsort extends TestCase {
  readonly op = 'ARGSORT';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [16, 10, 10, 10],
    readonly order: SortOrder = 'asc',
  ) {
    super();
  }

  vars(): Vars {
    // ggml_sort_order prints as its enum value
    return { type: this.type, ne: this.ne, order: this.order === 'asc' ? 0 : 1 };
  }

  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.ne), 'a');
    return named(ctx.argsort(a, this.order), 'out');
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    const [n0, n1, n2, n3] = this.ne;
    for (const t of ctx.tensors()) {
      if (t.type === 'i32') {
        // indices
        const data = new Int32Array(t.nelements);
        for (let i = 0; i < data.length; i++) data[i] = rng.rand();
        rng.shuffle(data);
        setI32(t, data.subarray(0, n0 * n1 * n2 * n3));
      } else if (t.type === 'f32') {
        // initialize with unique values to avoid ties
        for (let r = 0; r < t.nrows; r++) {
          const data = new Float32Array(t.ne[0]!);
          for (let i = 0; i < data.length; i++) data[i] = i;
          rng.shuffle(data);
          setF32(t, data, r * t.nb[1]!);
        }
      } else {
        throw new Error(`ARGSORT: cannot initialize a ${t.type} tensor`);
      }
    }
  }
}
