// Training ops: CROSS_ENTROPY_LOSS, OPT_STEP_ADAMW.

import type { Context, GgmlType, Tensor } from 'weft-ml';
import { float, type Vars } from '../format.js';
import type { Rng } from '../rng.js';
import { initTensorUniform } from '../tensor-data.js';
import { named, TestCase, TypeNeCase, type Ne4 } from '../test-case.js';

// GGML_OP_CROSS_ENTROPY_LOSS
export class TestCrossEntropyLoss extends TypeNeCase {
  readonly op = 'CROSS_ENTROPY_LOSS';
  constructor(type: GgmlType = 'f32', ne: Ne4 = [10, 5, 4, 3]) {
    super(type, ne);
  }
  buildGraph(ctx: Context): Tensor {
    const logits = this.input(ctx, this.type, this.ne, 'logits', { param: true });
    // The labels are assumed to be constant -> no gradients.
    let labels = named(this.newTensor(ctx, this.type, this.ne), 'labels');
    // Ensure labels add up to 1:
    labels = named(ctx.softMax(labels), 'labels_normalized');
    return named(ctx.crossEntropyLoss(logits, labels), 'out');
  }
  initializeTensors(ctx: Context, rng: Rng): void {
    // For larger abs. diffs between logits softmax is more linear, therefore more precise num. gradients.
    this.fillUniform(ctx, rng, -100, 100);
  }
  gradEps(): number {
    return 1;
  }
  gradPrecise(): boolean {
    return true;
  }
}

// GGML_OP_OPT_STEP_ADAMW
export class TestOptStepAdamw extends TestCase {
  readonly op = 'OPT_STEP_ADAMW';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [10, 5, 4, 3],
    readonly alpha = 1e-3,
    readonly beta1 = 0.9,
    readonly beta2 = 0.999,
    readonly eps = 1e-8,
    readonly wd = 0.0,
  ) {
    super();
  }
  vars(): Vars {
    const f = float;
    return { type: this.type, ne: this.ne, alpha: f(this.alpha), beta1: f(this.beta1), beta2: f(this.beta2), eps: f(this.eps), wd: f(this.wd) };
  }
  buildGraph(ctx: Context): Tensor {
    const [n0, n1, n2, n3] = this.ne;
    const a = named(this.newTensor4d(ctx, this.type, n0, n1, n2, n3), 'a');
    a.setParam(); // Despite tensor a having gradients the output tensor will not.
    const grad = named(this.newTensor4d(ctx, this.type, n0, n1, n2, n3), 'grad');
    const { alpha, beta1, beta2, eps, wd } = this;
    return named(ctx.optStepAdamw(a, grad, { alpha, beta1, beta2, eps, wd }), 'out');
  }
  initializeTensors(ctx: Context, rng: Rng): void {
    for (const t of ctx.tensors()) initTensorUniform(t, rng, 0, 1); // grad_v needs non-negative values.
  }
  gradPrecise(): boolean {
    return true;
  }
}
