// test_case of test-backend-ops: the hooks a case overrides, its printed name, and the
// hijacked tensor constructors that put a sentinel after every tensor in test mode.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { varsToStr, type Vars } from './format.js';
import type { Rng } from './rng.js';
import { initTensorUniform } from './tensor-data.js';

export type Mode = 'test' | 'grad' | 'perf' | 'support' | 'conformance';

/** Elements of a sentinel tensor (test_case::sentinel_size). */
export const SENTINEL_SIZE = 1024;

/** ggml_is_view_op. */
export function isViewOp(op: string): boolean {
  return op === 'VIEW' || op === 'RESHAPE' || op === 'PERMUTE' || op === 'TRANSPOSE';
}

export abstract class TestCase {
  /** What op_desc(out) gives for this case: the op ('MUL_MAT'), the unary op ('GELU'), 'LLAMA'. */
  abstract readonly op: string;

  /** The case's parameters in VARS_TO_STR order; floats marked with float(). */
  abstract vars(): Vars;

  /** Create the inputs (through this.newTensor*) and return the output tensor. */
  abstract buildGraph(ctx: Context): Tensor;

  /** op_desc: the name printed before the parameters. */
  opDesc(out: Tensor): string {
    return out.opDesc;
  }

  maxNmseErr(): number {
    return 1e-7;
  }

  maxMaaErr(): number {
    return 1e-4;
  }

  /** Finite-difference step (a C float). */
  gradEps(): number {
    return Math.fround(1e-1);
  }

  /** false: 2-point estimate (neglects 3rd-order terms); true: 4-point (neglects 5th). */
  gradPrecise(): boolean {
    return false;
  }

  /** Skip gradient checks when more than this many gradient values would be checked. */
  gradNmax(): number {
    return 10000;
  }

  /** If not empty, only check gradients whose numeric value matches one of these (ReLU ...). */
  gradExpect(): number[] {
    return [];
  }

  initializeTensors(ctx: Context, rng: Rng): void {
    for (const t of ctx.tensors()) initTensorUniform(t, rng);
  }

  /** Bytes an op touches: its result and every source. */
  opSize(t: Tensor): number {
    let size = t.nbytes;
    for (const s of t.srcs) if (s) size += s.nbytes;
    return size;
  }

  opFlops(_t: Tensor): number {
    return 0;
  }

  /** `OP(k=v,...)` exactly as ggml prints the case. */
  get name(): string {
    return `${this.op}(${this.params})`;
  }

  /** The `k=v,...` part of the name (what -p filters on). */
  get params(): string {
    return varsToStr(this.vars());
  }

  // ---- sentinels: test_case hijacks ggml_new_tensor* to add one after every tensor ----

  runMode: Mode = 'test';
  sentinels: Tensor[] = [];

  addSentinel(ctx: Context): void {
    if (this.runMode !== 'test') return;
    const s = ctx.newTensor1d('f32', SENTINEL_SIZE);
    s.name = `sent_${this.sentinels.length}`;
    this.sentinels.push(s);
  }

  /** ggml_new_tensor(ctx, type, ne.length, ne) plus a sentinel. */
  newTensor(ctx: Context, type: GgmlType, ne: readonly number[]): Tensor {
    const t = ctx.newTensor(type, [...ne]);
    this.addSentinel(ctx);
    return t;
  }

  newTensor1d(ctx: Context, type: GgmlType, ne0: number): Tensor {
    const t = ctx.newTensor1d(type, ne0);
    this.addSentinel(ctx);
    return t;
  }

  newTensor2d(ctx: Context, type: GgmlType, ne0: number, ne1: number): Tensor {
    const t = ctx.newTensor2d(type, ne0, ne1);
    this.addSentinel(ctx);
    return t;
  }

  newTensor3d(ctx: Context, type: GgmlType, ne0: number, ne1: number, ne2: number): Tensor {
    const t = ctx.newTensor3d(type, ne0, ne1, ne2);
    this.addSentinel(ctx);
    return t;
  }

  newTensor4d(ctx: Context, type: GgmlType, ne0: number, ne1: number, ne2: number, ne3: number): Tensor {
    const t = ctx.newTensor4d(type, ne0, ne1, ne2, ne3);
    this.addSentinel(ctx);
    return t;
  }

  /**
   * A new tensor `name` of shape `ne`, a parameter (ggml_set_param) when `param`. With `grow`,
   * the tensor is made bigger by those factors per dim and a view of shape `ne` at its offset 0
   * is returned, named `view_of_<name>`: the cases' non-contiguous inputs.
   */
  input(ctx: Context, type: GgmlType, ne: Ne4, name: string, opts: { param?: boolean; grow?: Ne4 | null } = {}): Tensor {
    const g = opts.grow;
    const t = this.newTensor(ctx, type, g ? ne.map((n, i) => n * g[i]!) : ne);
    if (opts.param) t.setParam();
    named(t, name);
    if (!g) return t;
    return named(ctx.view4d(t, ne[0], ne[1], ne[2], ne[3], t.nb[1]!, t.nb[2]!, t.nb[3]!, 0), `view_of_${name}`);
  }

  /** Reset per-run state before a mode builds the case. */
  begin(mode: Mode): void {
    this.runMode = mode;
    this.sentinels = [];
  }
}

/** A case whose parameters are a type and a shape (`OP(type=f32,ne=[...])`). */
export abstract class TypeNeCase extends TestCase {
  constructor(readonly type: GgmlType, readonly ne: Ne4) {
    super();
  }

  vars(): Vars {
    return { type: this.type, ne: this.ne };
  }

  /** Initialize every tensor uniformly in [min, max). */
  protected fillUniform(ctx: Context, rng: Rng, min: number, max: number): void {
    for (const t of ctx.tensors()) initTensorUniform(t, rng, min, max);
  }
}

/** Shorthand for a named tensor: ggml_set_name(t, name); returns t. */
export function named(t: Tensor, name: string): Tensor {
  t.name = name;
  return t;
}

/** 4-element shape type used by the cases (ggml's std::array<int64_t, 4>). */
export type Ne4 = readonly [number, number, number, number];
