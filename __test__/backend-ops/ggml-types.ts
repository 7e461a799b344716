// ggml's type traits the suite needs (block size, bytes per block, quantized or not) and the
// f32 -> f16 / bf16 conversions ggml_quantize_chunk applies to those two types.

import type { GgmlType } from 'weft-ml';

const QK_K = 256;

/** [block size, bytes per block, quantized] for each ggml type (ggml's type_traits). */
const TRAITS: Record<GgmlType, readonly [number, number, boolean]> = {
  f32: [1, 4, false],
  f16: [1, 2, false],
  q4_0: [32, 18, true],
  q4_1: [32, 20, true],
  q5_0: [32, 22, true],
  q5_1: [32, 24, true],
  q8_0: [32, 34, true],
  q8_1: [32, 36, true],
  q2_K: [QK_K, 84, true],
  q3_K: [QK_K, 110, true],
  q4_K: [QK_K, 144, true],
  q5_K: [QK_K, 176, true],
  q6_K: [QK_K, 210, true],
  q8_K: [QK_K, 292, true],
  iq2_xxs: [QK_K, 66, true],
  iq2_xs: [QK_K, 74, true],
  iq3_xxs: [QK_K, 98, true],
  iq1_s: [QK_K, 50, true],
  iq4_nl: [32, 18, true],
  iq3_s: [QK_K, 110, true],
  iq2_s: [QK_K, 82, true],
  iq4_xs: [QK_K, 136, true],
  i8: [1, 1, false],
  i16: [1, 2, false],
  i32: [1, 4, false],
  i64: [1, 8, false],
  f64: [1, 8, false],
  iq1_m: [QK_K, 56, true],
  bf16: [1, 2, false],
  q4_0_4x4: [32, 18, true],
  q4_0_4x8: [32, 18, true],
  q4_0_8x8: [32, 18, true],
  tq1_0: [QK_K, 54, true],
  tq2_0: [QK_K, 66, true],
};

/** Whether a string names a ggml type ('f32', 'q4_K', ...). */
export function isGgmlType(s: string): s is GgmlType {
  return Object.prototype.hasOwnProperty.call(TRAITS, s);
}

/** ggml_blck_size. */
export function blckSize(t: GgmlType): number {
  return TRAITS[t][0];
}

/** ggml_type_size: bytes per block. */
export function typeSize(t: GgmlType): number {
  return TRAITS[t][1];
}

/** ggml_is_quantized. */
export function isQuantized(t: GgmlType): boolean {
  return TRAITS[t][2];
}

/** ggml_row_size(type, ne). */
export function rowSize(t: GgmlType, ne: number): number {
  return (typeSize(t) * ne) / blckSize(t);
}

/** ggml_quantize_requires_imatrix. */
export function quantizeRequiresImatrix(t: GgmlType): boolean {
  return t === 'iq2_xxs' || t === 'iq2_xs' || t === 'iq1_s';
}

/** GGML_PAD(x, n). */
export function ggmlPad(x: number, n: number): number {
  return Math.ceil(x / n) * n;
}

// all_types, base_types and other_types of test-backend-ops, in its order.
export const ALL_TYPES: readonly GgmlType[] = [
  'f32', 'f16', 'bf16',
  'q4_0', 'q4_1',
  'q5_0', 'q5_1',
  'q8_0',
  'q2_K', 'q3_K',
  'q4_K', 'q5_K',
  'q6_K',
  // 'tq1_0', 'tq2_0', // TODO in ggml: implement for all backends
  'iq2_xxs', 'iq2_xs', 'iq2_s',
  'iq3_xxs', 'iq1_s', 'iq1_m',
  'iq4_nl', 'iq3_s', 'iq4_xs',
];

export const BASE_TYPES: readonly GgmlType[] = ['f32', 'f16', 'q4_0', 'q4_K', 'iq2_xxs'];

export const OTHER_TYPES: readonly GgmlType[] = [
  'q4_1',
  'q5_0', 'q5_1',
  'q8_0',
  'q2_K', 'q3_K',
  'q5_K',
  'q6_K',
  // 'tq1_0', 'tq2_0',
  'iq2_xs', 'iq2_s',
  'iq3_xxs', 'iq1_s', 'iq1_m',
  'iq4_nl', 'iq3_s', 'iq4_xs',
  'bf16',
];

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** ggml_fp32_to_fp16: round to nearest even, NaN stays NaN. */
export function f32ToF16(x: number): number {
  f32[0] = x;
  const w = u32[0]!;
  const sign = (w >>> 16) & 0x8000;
  const exp = (w >>> 23) & 0xff;
  let mant = w & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    if (rem > half || (rem === half && (m & 1))) m++;
    return sign | m;
  }
  let m = mant >>> 13;
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (m & 1))) {
    m++;
    if (m === 0x400) {
      m = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | m;
}

/** ggml_fp32_to_bf16: round to nearest even, NaN made quiet. */
export function f32ToBf16(x: number): number {
  f32[0] = x;
  const u = u32[0]!;
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return ((u + (0x7fff + ((u >>> 16) & 1))) >>> 16) & 0xffff;
}
