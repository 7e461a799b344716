// Shared by every shader (pasted in with `#include "common"`): tensor layouts and the
// flattening of the dispatch grid.

// A tensor's shape and strides, both in elements: ggml's ne, and nb / element size.
struct Layout {
    ne: vec4<u32>,
    nb: vec4<u32>,
}

// Flat index over a shape -> (i0, i1, i2, i3).
fn unravel(i: u32, ne: vec4<u32>) -> vec4<u32> {
    let r1 = i / ne.x;
    let r2 = r1 / ne.y;
    return vec4<u32>(i % ne.x, r1 % ne.y, r2 % ne.z, r2 / ne.z);
}

// Flat row index over a shape -> (0, i1, i2, i3).
fn unravel_row(row: u32, ne: vec4<u32>) -> vec4<u32> {
    let r2 = row / ne.y;
    return vec4<u32>(0u, row % ne.y, r2 % ne.z, r2 / ne.z);
}

// What every entry point takes: where the invocation sits in the dispatch.
struct Invocation {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}

// Workgroups come in a grid of up to three dimensions (each is capped at 65535 on most
// devices): the flat workgroup index.
fn group_index(inv: Invocation) -> u32 {
    return inv.wid.x + inv.nwg.x * (inv.wid.y + inv.nwg.y * inv.wid.z);
}

// The flat invocation index when each workgroup has `wg_size` invocations.
fn invocation_index(inv: Invocation, wg_size: u32) -> u32 {
    return group_index(inv) * wg_size + inv.lid;
}

// NaN tests and comparisons that keep C's answers around NaN. WGSL lets a compiler assume
// floats are never NaN (lavapipe does: it folds `x != x` and turns `a > b` into `!(a <= b)`),
// so where ggml's result depends on NaN (ARGMAX's running max, ARGSORT's exchange sort) the
// test is on the bits and each comparison is false when either side is NaN.
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn ordered_gt(a: f32, b: f32) -> bool {
    return !is_nan(a) && !is_nan(b) && a > b;
}
fn ordered_eq(a: f32, b: f32) -> bool {
    return !is_nan(a) && !is_nan(b) && a == b;
}

// f16 tensors are bound as array<u32> (pairs of halves, low half first): element i is
// half_to_f32(words[i / 2u], i). Decoded by hand rather than with unpack2x16float, which
// some adapters (GL) lack, and without needing the shader-f16 feature.
fn half_to_f32(word: u32, i: u32) -> f32 {
    let h = (word >> (16u * (i % 2u))) & 0xffffu;
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) {
        // Zero or subnormal: m * 2^-24, exact in f32.
        let v = f32(m) * 5.9604644775390625e-8;
        return select(v, -v, sign != 0u);
    }
    if (e == 31u) {
        // Infinity or NaN.
        return bitcast<f32>(sign | 0x7f800000u | (m << 13u));
    }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// f32 -> f16 bits (in the low 16 bits), rounded to nearest even like ggml's
// GGML_FP32_TO_FP16 (F16C): overflow gives infinity, NaN stays NaN, subnormals are exact.
fn f32_to_half(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let sign = (b >> 16u) & 0x8000u;
    let e = i32((b >> 23u) & 0xffu);
    let m = b & 0x7fffffu;
    if (e == 255) {
        return sign | 0x7c00u | select(0u, 0x200u | (m >> 13u), m != 0u);
    }
    // The exponent rebiased for f16 (bias 15 instead of 127).
    let he = e - 112;
    if (he >= 31) {
        return sign | 0x7c00u;
    }
    if (he <= 0) {
        // Subnormal (or zero) in f16: the 24-bit significand shifted right, rounded.
        if (he < -10) {
            return sign;
        }
        let full = m | 0x800000u;
        let shift = u32(14 - he);
        let r = full >> shift;
        let rem = full & ((1u << shift) - 1u);
        let half = 1u << (shift - 1u);
        return sign | (r + select(0u, 1u, rem > half || (rem == half && (r & 1u) == 1u)));
    }
    let r = (u32(he) << 10u) | (m >> 13u);
    let rem = m & 0x1fffu;
    // A carry out of the mantissa moves into the exponent, up to infinity: still right.
    return sign | (r + select(0u, 1u, rem > 0x1000u || (rem == 0x1000u && (r & 1u) == 1u)));
}

// bf16 tensors are bound as array<u32> like f16 ones: element i is the upper half of an f32.
fn bf16_to_f32(word: u32, i: u32) -> f32 {
    return bitcast<f32>(((word >> (16u * (i % 2u))) & 0xffffu) << 16u);
}

// f32 -> bf16 bits (low 16 bits) as ggml's GGML_FP32_TO_BF16: round to nearest even, NaN
// made quiet.
fn f32_to_bf16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return ((b >> 16u) | 64u) & 0xffffu;
    }
    return ((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u) & 0xffffu;
}
