// SUM_ROWS (and MEAN when MEAN is defined): the sum (mean) of each row of a (f32), into
// dst's element 0 of that row. One workgroup per row. f32 partial sums and a tree rather
// than ggml's f64 row sum, for the reason given in sum.wgsl.
#include "load_a"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: number of rows.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
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
    let n = p.a.ne.x;
    var s = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        s = s + load_a(base_a + i * p.a.nb.x);
    }
    var total = reduce_sum(lid, s);
#ifdef MEAN
    total = total / f32(n);
#endif
    if (lid == 0u) {
        dst[p.offs.x + dot(r, p.dst.nb)] = total;
    }
}
