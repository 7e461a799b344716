// OUT_PROD: dst[i0, i1, i2, i3] = sum_j a[i0, j, i2 / r2, i3 / r3] * b[i1, j, i2, i3]: the
// sum over j of the outer products of a's and b's rows j. a of any type (any_row.wgsl:
// float types, or dequant.wgsl's blocks along a's rows), b f32 or f16 (B_F16) with any
// strides (a transposed view). One invocation per four consecutive i0 of one dst row
// (WG_SIZE of them per workgroup), accumulating over j ascending with fused multiply-adds,
// as ggml's CPU does.
#include "common"

struct Params {
    dst: Layout,
    // a: ne, and nb in bytes; b: in elements.
    a: Layout,
    b: Layout,
    // Element offsets of dst and b; z: byte offset of a; w: column blocks per dst row.
    offs: vec4<u32>,
    // x, y: broadcast ratios r2, r3; z: dst rows.
    bc: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#ifdef B_F16
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
#endif
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

fn q_word(i: u32) -> u32 {
    return a[i];
}

#include "any_row"

fn b_at(i: u32) -> f32 {
#ifdef B_F16
    return half_to_f32(b[i / 2u], i);
#else
    return b[i];
#endif
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let w = group_index(inv);
    let ncb = p.offs.w;
    if (w >= ncb * p.bc.z) {
        return;
    }
    let g = (w % ncb) * {{WG_SIZE}}u + inv.lid;
    let r = unravel_row(w / ncb, p.dst.ne);
    let m = p.dst.ne.x;
    let i0 = 4u * g;
    if (i0 >= m) {
        return;
    }
    let n = p.a.ne.y;
    let a_mat = p.offs.z + (r.z / p.bc.x) * p.a.nb.z + (r.w / p.bc.y) * p.a.nb.w;
    let b_row = p.offs.y + r.y * p.b.nb.x + r.z * p.b.nb.z + r.w * p.b.nb.w;
    var acc = vec4<f32>(0.0);
#ifdef A_QUANT
    // Rows of blocks: m is a multiple of the block size, so all four are there.
    for (var j = 0u; j < n; j = j + 1u) {
        let wj = b_at(b_row + j * p.b.nb.y);
        acc = fma(row4(a_mat + j * p.a.nb.y, g), vec4<f32>(wj), acc);
    }
    let cnt = 4u;
#else
    let cnt = min(4u, m - i0);
    for (var j = 0u; j < n; j = j + 1u) {
        let wj = b_at(b_row + j * p.b.nb.y);
        let row = a_mat + j * p.a.nb.y;
        var x = vec4<f32>(0.0);
        for (var c = 0u; c < cnt; c = c + 1u) {
            x[c] = row1(row, i0 + c);
        }
        acc = fma(x, vec4<f32>(wj), acc);
    }
#endif
    let d = p.offs.x + i0 * p.dst.nb.x + r.y * p.dst.nb.y + r.z * p.dst.nb.z + r.w * p.dst.nb.w;
    for (var c = 0u; c < cnt; c = c + 1u) {
        dst[d + c * p.dst.nb.x] = acc[c];
    }
}
