// RMS_NORM_BACK: the gradient dx of y = x / sqrt(mean(x^2) + eps) along rows, from a = x
// and b = dz (f32), in ggml-cpu's steps: sum_xx = sum(x*x), sum_xdz = sum(x*dz),
// dx = (x * (-sum_xdz / (sum_xx + eps*n)) + dz) / sqrt(sum_xx/n + eps). One workgroup per
// row. f32 sums and a tree rather than ggml's f64, for the reason given in sum.wgsl.
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: number of rows.
    offs: vec4<u32>,
    eps: f32,
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
    var xx = 0.0;
    var xdz = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let x = a[base_a + i * p.a.nb.x];
        xx = xx + x * x;
        xdz = xdz + x * b[base_b + i * p.b.nb.x];
    }
    let sum_xx = reduce_sum(lid, xx);
    let sum_xdz = reduce_sum(lid, xdz);
    let mean_eps = sum_xx / f32(n) + p.eps;
    let sum_eps = sum_xx + p.eps * f32(n);
    let rrms = 1.0 / sqrt(mean_eps);
    let k = -sum_xdz / sum_eps;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let x = a[base_a + i * p.a.nb.x];
        dst[base_d + i * p.dst.nb.x] = (x * k + b[base_b + i * p.b.nb.x]) * rrms;
    }
}
