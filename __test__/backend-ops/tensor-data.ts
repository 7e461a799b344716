// Filling tensors and reading them back, and the two error measures, as test-backend-ops
// defines them (init_tensor_uniform, tensor_to_float, nmse, mean_abs_asymm).

import type { Tensor } from 'weft-ml';
import { NotSupported, quantizer } from './capabilities.js';
import { blckSize, isQuantized, quantizeRequiresImatrix, rowSize } from './ggml-types.js';
import type { Rng } from './rng.js';

function bytesOf(a: ArrayBufferView, n = a.byteLength): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, Math.min(n, a.byteLength));
}

/**
 * init_tensor_uniform: uniform floats in [min, max) written in the tensor's type, with ggml's
 * rules for every type: f32 as is; I32 gets the floats' bit patterns (ggml writes the float
 * buffer into it); f16/bf16 converted; quantized types through ggml_quantize_chunk one block
 * per row, with a dummy all-ones importance matrix that is dropped at random where the type
 * does not need one; I8/I16 the first nbytes of the float buffer; I64 the float buffer's
 * first half written twice. Bytes go to the tensor's data pointer contiguously, as
 * ggml_backend_tensor_set does, views included.
 */
export function initTensorUniform(t: Tensor, rng: Rng, min = -1, max = 1): void {
  const nels = t.nelements;
  const data = new Float32Array(nels);
  rng.fillUniform(data, min, max);
  const type = t.type;

  if (type === 'f32' || type === 'i32') {
    t.set(bytesOf(data), 0);
  } else if (isQuantized(type) || type === 'f16' || type === 'bf16') {
    const bs = blckSize(type);
    if (nels % bs !== 0) throw new Error(`init_tensor_uniform: ${nels} elements of ${type} are not whole blocks`);
    if (type === 'f16' || type === 'bf16') {
      // ggml converts through ggml_quantize_chunk too; the binding's converter rounds as
      // f32ToF16 / f32ToBf16 do, in Rust (the perf cases convert 58M values).
      const n0 = t.ne[0]!;
      if (nels > 0) t.set(quantizer()(type, data, 0, nels / n0, n0, null), 0);
    } else {
      const quantize = quantizer();
      // ggml passes a row of ne[0] ones; ggml_quantize_chunk reads n_per_row (= bs) of them.
      let im: Float32Array | null = new Float32Array(bs).fill(1);
      // when the imatrix is optional, test quantization both with and without it
      if (!quantizeRequiresImatrix(type) && data[0]! > 0.5 * (min + max)) im = null;
      const q = quantize(type, data, 0, nels / bs, bs, im);
      if (q.byteLength !== rowSize(type, nels)) {
        throw new Error(`quantizeChunk(${type}) returned ${q.byteLength} bytes, expected ${rowSize(type, nels)}`);
      }
      t.set(q, 0);
    }
  } else if (type === 'i8' || type === 'i16') {
    // "This is going to create some weird integers though."
    t.set(bytesOf(data, t.nbytes), 0);
  } else if (type === 'i64') {
    // 8-byte integers: the float data mirrored into both halves.
    const half = t.nbytes / 2;
    t.set(bytesOf(data, half), 0);
    t.set(bytesOf(data, half), half);
  } else {
    throw new Error(`init_tensor_uniform: type ${type} cannot be initialized`);
  }
}

/** Write int32 values at a byte offset (ggml_backend_tensor_set of an int array). */
export function setI32(t: Tensor, values: Int32Array | readonly number[], offset = 0): void {
  const a = values instanceof Int32Array ? values : Int32Array.from(values);
  t.set(bytesOf(a), offset);
}

/** Write f32 values at a byte offset (ggml_backend_tensor_set of a float array). */
export function setF32(t: Tensor, values: Float32Array | readonly number[], offset = 0): void {
  const a = values instanceof Float32Array ? values : Float32Array.from(values);
  t.set(bytesOf(a), offset);
}

/**
 * tensor_to_float: every element as f32 in logical order (ne0 fastest), following the
 * tensor's strides and dequantizing. Quantized types need the binding's dequantizer.
 */
export function tensorToFloat(t: Tensor): Float32Array {
  try {
    return t.toFloat32();
  } catch (e) {
    if (isQuantized(t.type)) throw new NotSupported(`dequantization of ${t.type} missing (${(e as Error).message})`);
    throw e;
  }
}

/** nmse: normalized mean squared error = mse(a, b) / mse(a, 0), float terms summed in double. */
export function nmse(a: Float32Array, b: Float32Array): number {
  let mseAB = 0;
  let mseA0 = 0;
  const n = a.length;
  for (let i = 0; i < n; i++) {
    const ai = a[i]!;
    const bi = b[i]!;
    const d = Math.fround(ai - bi);
    mseAB += Math.fround(d * d);
    mseA0 += Math.fround(ai * ai);
  }
  return mseAB / mseA0;
}

/**
 * mean_abs_asymm: mean of |(a - b) / (a + b)|. With `expected` non-empty, only positions where a
 * is within 1e-3 of one of the expected values count (noncontinuous gradients).
 */
export function meanAbsAsymm(a: Float32Array, b: Float32Array, expected: readonly number[]): number {
  let sum = 0;
  let nvalid = 0;
  for (let i = 0; i < a.length; i++) {
    const ai = a[i]!;
    if (expected.length > 0 && !expected.some((ev) => Math.abs(Math.fround(ai - ev)) < Math.fround(1e-3))) continue;
    const bi = b[i]!;
    const asymm = Math.fround(Math.fround(ai - bi) / Math.fround(ai + bi));
    sum += Math.abs(asymm);
    nvalid++;
  }
  return sum / nvalid;
}

const FLT_MAX = 3.4028234663852886e38;

/** isinf_or_max: ggml accepts +-FLT_MAX as infinity. */
export function isinfOrMax(f: number): boolean {
  return f === Infinity || f === -Infinity || f === FLT_MAX || f === -FLT_MAX;
}

/** std::signbit. */
export function signbit(f: number): boolean {
  return f < 0 || Object.is(f, -0) || (Number.isNaN(f) && new Uint32Array(Float32Array.of(f).buffer)[0]! >>> 31 === 1);
}
