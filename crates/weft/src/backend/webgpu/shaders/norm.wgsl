// NORM and RMS_NORM along rows (f32), one workgroup per row; safe in place (every element
// is read and written by the same invocation). With CENTER (NORM): ggml's two passes, the
// mean, then the variance of the f32 differences, and (x - mean) / sqrt(var + eps).
// Without (RMS_NORM): the mean is 0, so the same loops give x / sqrt(mean(x^2) + eps) bit
// for bit (x - 0 is x). f32 sums and a tree rather than ggml's f64, for the reason given
// in sum.wgsl (and NORM's variance is of differences from the mean: nothing cancels).
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
#ifdef CENTER
    var sum = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        sum = sum + a[base_a + i * p.a.nb.x];
    }
    let mean = reduce_sum(lid, sum) / f32(n);
#else
    let mean = 0.0;
#endif
    var sum2 = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let d = a[base_a + i * p.a.nb.x] - mean;
        sum2 = sum2 + d * d;
    }
    let variance = reduce_sum(lid, sum2) / f32(n);
    let scale = 1.0 / sqrt(variance + p.eps);
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        dst[base_d + i * p.dst.nb.x] = (a[base_a + i * p.a.nb.x] - mean) * scale;
    }
}
