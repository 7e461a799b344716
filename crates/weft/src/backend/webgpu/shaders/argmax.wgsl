// ARGMAX: the index of the largest element of each row of the matrix a (any float type
// through load_a), as i32. One workgroup per row. As ggml_vec_argmax_f32, equal maxima
// give the last index. ggml's running `max = MAX(max, x)` lets a NaN replace the max (and
// the next element replace the NaN), so a row holding NaN is answered by invocation 0
// replaying ggml's loop; other rows by a (value, index) tree.
#include "load_a"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: number of rows (a.ne[1]).
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// i32 indices, written as their (non-negative) bits.
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let row = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (row >= p.offs.w) {
        return;
    }
    let base = p.offs.y + row * p.a.nb.y;
    let n = p.a.ne.x;
    var best = 0.0;
    var best_i = ARGMAX_NONE;
    var nan = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let x = load_a(base + i * p.a.nb.x);
        if (x != x) {
            nan = 1.0;
        } else if (best_i == ARGMAX_NONE || x >= best) {
            best = x;
            best_i = i;
        }
    }
    let idx = reduce_argmax(lid, best, best_i);
    let any_nan = reduce_max(lid, nan);
    if (lid != 0u) {
        return;
    }
    var out = select(idx, 0u, idx == ARGMAX_NONE);
    if (any_nan > 0.0) {
        // ggml's loop; its -inf start gives way to element 0 whatever it is.
        var mx = load_a(base);
        out = 0u;
        for (var i = 1u; i < n; i = i + 1u) {
            let x = load_a(base + i * p.a.nb.x);
            mx = select(x, mx, mx > x);
            if (mx == x) {
                out = i;
            }
        }
    }
    dst[p.offs.x + row * p.dst.nb.x] = out;
}
