// CROSS_ENTROPY_LOSS_BACK: the gradient of CROSS_ENTROPY_LOSS for logits a, targets b and
// the loss's gradient c (a scalar): dx = (softmax(a) - b) * c / rows, f32, along rows. One
// workgroup per row; the softmax as soft_max.wgsl computes it (f32 sum with a tree rather
// than ggml's f64, for the reason given in sum.wgsl).
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: number of rows.
    offs: vec4<u32>,
    // Element offset of c inside its binding.
    c_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;

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
    let d_by_nr = c[p.c_off] / f32(p.offs.w);
    var mx = -3.40282347e38;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        mx = max(mx, a[base_a + i * p.a.nb.x]);
    }
    mx = reduce_max(lid, mx);
    var s = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        s = s + exp(a[base_a + i * p.a.nb.x] - mx);
    }
    let inv_sum = 1.0 / reduce_sum(lid, s);
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let sm = exp(a[base_a + i * p.a.nb.x] - mx) * inv_sum;
        dst[base_d + i * p.dst.nb.x] = (sm - b[base_b + i * p.b.nb.x]) * d_by_nr;
    }
}
