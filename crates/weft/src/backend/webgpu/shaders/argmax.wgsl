// ARGMAX: the index of the largest element of each row of the matrix a (any float type
// through load_a), as i32. One workgroup per row.
//
// ggml_vec_argmax_f32 runs `max = MAX(max, x); if (max == x) idx = i;` from max = -inf,
// idx = 0. A NaN makes max NaN without moving idx, and the next element then replaces the
// NaN, so the loop's answer is: the last index holding the maximum of the run of elements
// after the last NaN that precedes the last non-NaN element q (trailing NaNs change
// nothing), or 0 when the row is all NaN. Three passes find q, that NaN, and the maximum,
// each a workgroup reduction: no invocation replays the loop (lavapipe stops a loop after
// 65535 iterations).
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

    // The run is [start, end): end is one past the last non-NaN element (0: none), start one
    // past the last NaN before it (0: none).
    var mine = 0u;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        if (!is_nan(load_a(base + i * p.a.nb.x))) {
            mine = i + 1u;
        }
    }
    let end = reduce_max_u32(lid, mine);
    mine = 0u;
    for (var i = lid; i < end; i = i + {{WG_SIZE}}u) {
        if (is_nan(load_a(base + i * p.a.nb.x))) {
            mine = i + 1u;
        }
    }
    let start = reduce_max_u32(lid, mine);

    // The run holds no NaN: plain comparisons; of equal maxima the last index.
    var best = 0.0;
    var best_i = ARGMAX_NONE;
    for (var i = start + lid; i < end; i = i + {{WG_SIZE}}u) {
        let x = load_a(base + i * p.a.nb.x);
        if (best_i == ARGMAX_NONE || x >= best) {
            best = x;
            best_i = i;
        }
    }
    let idx = reduce_argmax(lid, best, best_i);
    if (lid == 0u) {
        dst[p.offs.x + row * p.dst.nb.x] = select(idx, 0u, idx == ARGMAX_NONE);
    }
}
