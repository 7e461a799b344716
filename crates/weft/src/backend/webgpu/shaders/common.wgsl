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
