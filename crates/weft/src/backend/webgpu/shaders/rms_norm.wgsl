// RMS_NORM: x / sqrt(mean(x^2) + eps) along rows. One workgroup per row; safe in place
// (each invocation reads an element before writing that same element).
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: number of rows.
    offs: vec4<u32>,
    eps: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

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
    let base_d = p.offs.x + dot(r, p.dst.nb);
    let n = p.a.ne.x;
    var sum = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let x = a[base_a + i * p.a.nb.x];
        sum = sum + x * x;
    }
    let mean = reduce_sum(lid, sum) / f32(n);
    let scale = 1.0 / sqrt(mean + p.eps);
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        dst[base_d + i * p.dst.nb.x] = a[base_a + i * p.a.nb.x] * scale;
    }
}
