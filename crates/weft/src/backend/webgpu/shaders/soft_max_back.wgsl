// SOFT_MAX_BACK: dx = y * (dy - dot(y, dy)) along rows, from a = dy and b = y (f32). One
// workgroup per row; safe in place over a (every element is read and written by the same
// invocation). The dot in f32 with a tree rather than ggml's f64, for the reason given in
// sum.wgsl.
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: number of rows.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let row = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (row >= p.offs.w) {
        return;
    }
    let r = unravel_row(row, p.a.ne);
    let base_a = p.offs.y + dot(r, p.a.nb);
    let base_b = p.offs.z + dot(r, p.b.nb);
    let base_d = p.offs.x + dot(r, p.dst.nb);
    let n = p.a.ne.x;
    var s = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        s = s + a[base_a + i * p.a.nb.x] * b[base_b + i * p.b.nb.x];
    }
    let dot_y_dy = reduce_sum(lid, s);
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let dy = a[base_a + i * p.a.nb.x];
        dst[base_d + i * p.dst.nb.x] = (dy - dot_y_dy) * b[base_b + i * p.b.nb.x];
    }
}
