// Image and signal ops: POOL_2D, CONV_TRANSPOSE_1D, IM2COL, UPSCALE (both forms).

import type { Context, GgmlType, PoolOp, Tensor } from 'weft-ml';
import type { Vars } from '../format.js';
import { named, TestCase, type Ne4 } from '../test-case.js';

// GGML_OP_POOL_2D
export class TestPool2d extends TestCase {
  readonly op = 'POOL_2D';
  constructor(
    readonly poolType: PoolOp = 'avg',
    readonly typeInput: GgmlType = 'f32',
    readonly neInput: Ne4 = [10, 10, 3, 1], // [input_width, input_height, input_channels, 1]
    readonly k0 = 3, // kernel size
    readonly k1 = 3,
    readonly s0 = 1, // stride
    readonly s1 = 1,
    readonly p0 = 1, // padding
    readonly p1 = 1,
  ) {
    super();
  }
  vars(): Vars {
    const { k0, k1, s0, s1, p0, p1 } = this;
    return { pool_type: this.poolType, type_input: this.typeInput, ne_input: this.neInput, k0, k1, s0, s1, p0, p1 };
  }
  buildGraph(ctx: Context): Tensor {
    const input = this.input(ctx, this.typeInput, this.neInput, 'input', { param: true });
    const { k0, k1, s0, s1, p0, p1 } = this;
    return named(ctx.pool2d(input, this.poolType, { k0, k1, s0, s1, p0, p1 }), 'out');
  }
}

// GGML_OP_CONV_TRANSPOSE_1D
export class TestConvTranspose1d extends TestCase {
  readonly op = 'CONV_TRANSPOSE_1D';
  constructor(
    readonly neInput: Ne4 = [197, 32, 1, 1], // [input_width, input_height, input_channels, 1]
    readonly neKernel: Ne4 = [16, 32, 32, 1], // [kernel_width, kernel_height, input_channels, 1]
    readonly s0 = 1, // stride
    readonly p0 = 0, // padding
    readonly d0 = 1, // dilation
  ) {
    super();
  }
  vars(): Vars {
    return { ne_input: this.neInput, ne_kernel: this.neKernel, s0: this.s0, p0: this.p0, d0: this.d0 };
  }
  buildGraph(ctx: Context): Tensor {
    const input = named(this.newTensor(ctx, 'f32', this.neInput), 'input');
    const kernel = named(this.newTensor(ctx, 'f32', this.neKernel), 'kernel');
    return named(ctx.convTranspose1d(kernel, input, this.s0, this.p0, this.d0), 'out');
  }
}

// GGML_OP_IM2COL
export class TestIm2col extends TestCase {
  readonly op = 'IM2COL';
  constructor(
    readonly typeInput: GgmlType = 'f32',
    readonly typeKernel: GgmlType = 'f16',
    readonly dstType: GgmlType = 'f32',
    readonly neInput: Ne4 = [10, 10, 3, 1], // [input_width, input_height, input_channels, 1]
    readonly neKernel: Ne4 = [3, 3, 3, 1], // [kernel_width, kernel_height, input_channels, 1]
    readonly s0 = 1, // stride
    readonly s1 = 1,
    readonly p0 = 1, // padding
    readonly p1 = 1,
    readonly d0 = 1, // dilation
    readonly d1 = 1,
    readonly is2D = true,
  ) {
    super();
  }
  vars(): Vars {
    const { s0, s1, p0, p1, d0, d1 } = this;
    return {
      type_input: this.typeInput,
      type_kernel: this.typeKernel,
      dst_type: this.dstType,
      ne_input: this.neInput,
      ne_kernel: this.neKernel,
      s0, s1, p0, p1, d0, d1,
      is_2D: this.is2D,
    };
  }
  buildGraph(ctx: Context): Tensor {
    const input = this.input(ctx, this.typeInput, this.neInput, 'input', { param: true });
    const kernel = named(this.newTensor(ctx, this.typeKernel, this.neKernel), 'kernel');
    const { s0, s1, p0, p1, d0, d1, is2D, dstType } = this;
    return named(ctx.im2col(kernel, input, { s0, s1, p0, p1, d0, d1, is2D, dstType }), 'out');
  }
}

// GGML_OP_UPSCALE
export class TestUpscale extends TestCase {
  readonly op = 'UPSCALE';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [512, 512, 3, 1],
    readonly scaleFactor = 2,
    readonly transpose = false,
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, scale_factor: this.scaleFactor, transpose: this.transpose };
  }
  buildGraph(ctx: Context): Tensor {
    let a = named(this.newTensor(ctx, this.type, this.ne), 'a');
    if (this.transpose) a = named(ctx.transpose(a), 'a_transposed');
    return named(ctx.upscale(a, this.scaleFactor), 'out');
  }
}

// GGML_OP_UPSCALE (ext)
export class TestUpscaleExt extends TestCase {
  readonly op = 'UPSCALE';
  constructor(
    readonly type: GgmlType = 'f32',
    readonly ne: Ne4 = [2, 5, 7, 11],
    readonly neTgt: Ne4 = [5, 7, 11, 13],
  ) {
    super();
  }
  vars(): Vars {
    return { type: this.type, ne: this.ne, ne_tgt: this.neTgt };
  }
  buildGraph(ctx: Context): Tensor {
    const a = named(this.newTensor(ctx, this.type, this.ne), 'a');
    const [t0, t1, t2, t3] = this.neTgt;
    return named(ctx.upscaleExt(a, t0, t1, t2, t3), 'out');
  }
}
