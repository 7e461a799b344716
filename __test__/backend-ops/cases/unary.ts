// Elementwise ops of one input: GGML_OP_UNARY (every ggml_unary_op), SQR, SQRT, LOG, SIN,
// COS, CLAMP, LEAKY_RELU.

import type { Context, GgmlType, Tensor, UnaryOp } from 'weft-ml';
import { float, type Vars } from '../format.js';
import type { Rng } from '../rng.js';
import { initTensorUniform } from '../tensor-data.js';
import { named, TestCase, TypeNeCase, type Ne4 } from '../test-case.js';

/** ggml_unary_op in enum order (GGML_UNARY_OP_COUNT = 14 at the reference commit). */
export const UNARY_OPS: readonly UnaryOp[] = [
  'ABS', 'SGN', 'NEG', 'STEP', 'TANH', 'ELU', 'RELU', 'SIGMOID',
  'GELU', 'GELU_QUICK', 'SILU', 'HARDSWISH', 'HARDSIGMOID', 'EXP',
];

/** The body every "a -> op(a)" case shares: input "a" (a parameter unless `param` is false), op, "out". */
abstract class UnaryLike extends TypeNeCase {
  protected abstract apply(ctx: Context, a: Tensor): Tensor;

  /** Whether a is a parameter (has a gradient) in this case. */
  protected get param(): boolean {
    return true;
  }

  buildGraph(ctx: Context): Tensor {
    const a = this.input(ctx, this.type, this.ne, 'a', { param: this.param });
    return named(this.apply(ctx, a), 'out');
  }
}

// GGML_OP_UNARY
export class TestUnary extends TestCase {
  constructor(
    readonly unaryOp: UnaryOp,
    readonly type: GgmlType = 'f32',
    readonly neA: Ne4 = [128, 2, 2, 2],
    readonly v = 0, // view (1: non-contiguous a)
  ) {
    super();
  }

  get op(): string {
    return this.unaryOp;
  }

  vars(): Vars {
    return { type: this.type, ne_a: this.neA, v: this.v };
  }

  buildGraph(ctx: Context): Tensor {
    const op = this.unaryOp;
    const gradSupported = op === 'ABS' || op === 'SGN' || op === 'NEG' || op === 'STEP' || op === 'RELU' || op === 'SILU';
    const a = this.input(ctx, this.type, this.neA, 'a', { param: gradSupported, grow: this.v & 1 ? [3, 1, 1, 1] : null });
    return named(ctx.unary(a, op), 'out');
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    // test extended range of values to check for NaNs in GELU
    for (const t of ctx.tensors()) initTensorUniform(t, rng, -150, 150);
  }

  gradEps(): number {
    return 15;
  }

  gradExpect(): number[] {
    const op = this.unaryOp;
    if (op === 'ABS') return [-1, 1];
    if (op === 'SGN' || op === 'STEP') return [0];
    if (op === 'RELU') return [0, 1];
    return [];
  }
}

/** What distinguishes SQR, SQRT, LOG, SIN and COS: the op, ggml's default shape, input range, gradient settings. */
interface MathSpec {
  op: string;
  ne: Ne4;
  apply: (ctx: Context, a: Tensor) => Tensor;
  /** init_tensor_uniform range (default [-1, 1)). */
  range?: readonly [number, number];
  gradEps?: (ne: Ne4) => number;
  gradPrecise?: boolean;
  maxMaaErr?: number;
}

/** A case class for one elementwise math op. */
function mathCase(spec: MathSpec): new (type?: GgmlType, ne?: Ne4) => UnaryLike {
  return class extends UnaryLike {
    readonly op = spec.op;
    constructor(type: GgmlType = 'f32', ne: Ne4 = spec.ne) {
      super(type, ne);
    }
    protected apply(ctx: Context, a: Tensor): Tensor {
      return spec.apply(ctx, a);
    }
    initializeTensors(ctx: Context, rng: Rng): void {
      const [min, max] = spec.range ?? [-1, 1];
      this.fillUniform(ctx, rng, min, max);
    }
    gradEps(): number {
      return spec.gradEps ? spec.gradEps(this.ne) : super.gradEps();
    }
    gradPrecise(): boolean {
      return spec.gradPrecise ?? false;
    }
    maxMaaErr(): number {
      return spec.maxMaaErr ?? super.maxMaaErr();
    }
  };
}

// GGML_OP_SQR
export const TestSqr = mathCase({
  op: 'SQR',
  ne: [10, 5, 4, 3],
  apply: (ctx, a) => ctx.sqr(a),
  // 10% of expected value of sum: 0.1f * 0.25f*ne[0]*ne[1]*ne[2]*ne[3], in float steps
  gradEps: (ne) => ne.reduce((e, n) => Math.fround(e * n), Math.fround(Math.fround(0.1) * Math.fround(0.25))),
});

// GGML_OP_SQRT
export const TestSqrt = mathCase({
  op: 'SQRT',
  ne: [10, 3, 3, 2],
  apply: (ctx, a) => ctx.sqrt(a),
  range: [50, 100], // fill with positive values
  gradEps: () => 20,
  gradPrecise: true,
});

// GGML_OP_LOG
export const TestLog = mathCase({
  op: 'LOG',
  ne: [10, 5, 4, 3],
  apply: (ctx, a) => ctx.log(a),
  // log(1) == 0, cluster values there to keep the sum low for better precision in the backward pass
  range: [0.9, 1.1],
  gradPrecise: true,
});

// SIN and COS cover the interval [-2*pi, 2*pi].
const trig = { ne: [10, 2, 2, 2], range: [-6.5, 6.5], gradEps: () => Math.fround(0.2), gradPrecise: true, maxMaaErr: 1e-3 } as const;

// GGML_OP_SIN
export const TestSin = mathCase({ ...trig, op: 'SIN', apply: (ctx, a) => ctx.sin(a) });

// GGML_OP_COS
export const TestCos = mathCase({ ...trig, op: 'COS', apply: (ctx, a) => ctx.cos(a) });

// GGML_OP_CLAMP
export class TestClamp extends UnaryLike {
  readonly op = 'CLAMP';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [10, 5, 4, 3], readonly min = -0.5, readonly max = 0.5) {
    super(type, ne);
  }
  vars(): Vars {
    return { ...super.vars(), min: float(this.min), max: float(this.max) };
  }
  protected get param(): boolean {
    return false;
  }
  protected apply(ctx: Context, a: Tensor): Tensor {
    return ctx.clamp(a, this.min, this.max);
  }
  gradEps(): number {
    return Math.fround(1e-2);
  }
  gradExpect(): number[] {
    return [0, 1];
  }
}

// GGML_OP_LEAKY_RELU
export class TestLeakyRelu extends UnaryLike {
  readonly op = 'LEAKY_RELU';
  constructor(type: GgmlType = 'f32', neA: Ne4 = [10, 5, 4, 3], readonly negativeSlope = 0.1) {
    super(type, neA);
  }
  vars(): Vars {
    return { type: this.type, ne_a: this.ne, negative_slope: float(this.negativeSlope) };
  }
  protected get param(): boolean {
    return false;
  }
  protected apply(ctx: Context, a: Tensor): Tensor {
    return ctx.leakyRelu(a, this.negativeSlope, true);
  }
}
