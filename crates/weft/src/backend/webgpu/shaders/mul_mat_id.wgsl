// MUL_MAT_ID: dst[i0, slot, token] = dot(row i0 of expert ids[slot, token] of `as`,
// b[:, slot % b.ne1, token]). as [k, m, n_expert] of any type (any_row.wgsl: float types or
// dequant.wgsl's blocks), b f32, ids i32 [n_used, n_tokens]. A simple row-block kernel: one
// workgroup per (block of WG_SIZE expert rows, slot, token), one output row per invocation,
// each a sequential dot over k (four partial sums). As ggml's CPU does, b is rounded to the
// experts' type first for f16 and bf16 experts. An expert id outside 0..n_expert writes 0
// (the CPU backend reports it as an error) rather than reading out of bounds.
#include "common"

struct Params {
    dst: Layout,
    // as: ne, and nb in bytes (b and ids: in elements).
    a: Layout,
    b: Layout,
    ids: Layout,
    // Element offsets of dst, b and ids; w: row blocks per (slot, token).
    offs: vec4<u32>,
    // x: byte offset of as; y: k; z: n_expert; w: m.
    dims: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> ids: array<i32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;

fn q_word(i: u32) -> u32 {
    return a[i];
}

#include "any_row"

fn b_conv(x: f32) -> f32 {
#ifdef QT_F16
    return half_to_f32(f32_to_half(x), 0u);
#else
#ifdef QT_BF16
    return bf16_to_f32(f32_to_bf16(x), 0u);
#else
    return x;
#endif
#endif
}

fn b4(at: u32) -> vec4<f32> {
    return vec4<f32>(b_conv(b[at]), b_conv(b[at + 1u]), b_conv(b[at + 2u]), b_conv(b[at + 3u]));
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let w = group_index(inv);
    let n_used = p.dst.ne.y;
    let n_tokens = p.dst.ne.z;
    let nrb = p.offs.w;
    if (w >= nrb * n_used * n_tokens) {
        return;
    }
    let i0 = (w % nrb) * {{WG_SIZE}}u + inv.lid;
    let pair = w / nrb;
    let slot = pair % n_used;
    let token = pair / n_used;
    let m = p.dims.w;
    if (i0 >= m) {
        return;
    }
    let d_at = p.offs.x + i0 * p.dst.nb.x + slot * p.dst.nb.y + token * p.dst.nb.z;
    let e = ids[p.offs.z + slot * p.ids.nb.x + token * p.ids.nb.y];
    if (e < 0 || u32(e) >= p.dims.z) {
        dst[d_at] = 0.0;
        return;
    }
    let row = p.dims.x + i0 * p.a.nb.y + u32(e) * p.a.nb.z;
    let b_at = p.offs.y + (slot % p.b.ne.y) * p.b.nb.y + token * p.b.nb.z;
    let k = p.dims.y;
    let g4 = k / 4u;
    var acc = vec4<f32>(0.0);
    for (var g = 0u; g < g4; g = g + 1u) {
        acc = acc + row4(row, g) * b4(b_at + 4u * g);
    }
    var s = (acc.x + acc.y) + (acc.z + acc.w);
#ifndef A_QUANT
    for (var i = 4u * g4; i < k; i = i + 1u) {
        s = s + row1(row, i) * b_conv(b[b_at + i]);
    }
#endif
    dst[d_at] = s;
}
