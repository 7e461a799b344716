// CROSS_ENTROPY_LOSS: -(1/rows) * sum over rows of sum_i b_i * log_softmax(a)_i, for
// logits a and target probabilities b (f32, same shape), into dst's single element. One
// workgroup walks the rows in order, and adds the row losses in f32 in that order (ggml's
// order on one thread); within a row: the max, the sum of exp(a - max), then
// sum((a - max - log(sum)) * b), each in f32 with a tree rather than ggml's f64 (the
// reason is given in sum.wgsl).
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
    let lid = inv.lid;
    let n = p.a.ne.x;
    var total = 0.0;
    for (var row = 0u; row < p.offs.w; row = row + 1u) {
        let r = unravel_row(row, p.a.ne);
        let base_a = p.offs.y + dot(r, p.a.nb);
        let base_b = p.offs.z + dot(r, p.b.nb);
        // The lowest finite f32 for -inf, as in soft_max.wgsl.
        var mx = -3.40282347e38;
        for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
            mx = max(mx, a[base_a + i * p.a.nb.x]);
        }
        mx = reduce_max(lid, mx);
        var s = 0.0;
        for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
            s = s + exp(a[base_a + i * p.a.nb.x] - mx);
        }
        let log_sum = log(reduce_sum(lid, s));
        var l = 0.0;
        for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
            l = l + (a[base_a + i * p.a.nb.x] - mx - log_sum) * b[base_b + i * p.b.nb.x];
        }
        total = total + reduce_sum(lid, l);
    }
    if (lid == 0u) {
        dst[p.offs.x] = total * (-1.0 / f32(p.offs.w));
    }
}
