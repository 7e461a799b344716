// ARGSORT: each row's permutation that sorts a (any float type through load_a) ascending,
// or descending with DESC, as i32. One workgroup per row, rows up to {{SORT_MAX}} long
// (ops/index.rs refuses longer ones): a bitonic sort of the row's indices in workgroup
// memory (values cached beside them), padded to a power of two n_pad.
//
// The network is the "flip" form (every comparator puts the smaller key first; the first
// stage of each merge compares mirrored pairs), so the padding never moves: a comparator
// reaching past n would find a virtual +inf above it, and is skipped.
//
// ggml sorts with an unstable exchange sort, so its order among equal values (and around
// NaN) depends on the whole row. A row with no NaN and no two equal values has one sorted
// order, which the network finds; a row with either is re-sorted by invocation 0 replaying
// ggml's exchange sort, as the CPU backend does. That replay is why rows are capped: its
// n(n-1)/2 steps run in one invocation, and lavapipe stops an invocation's loops after 65535
// iterations (a 256-element row takes 32640).
#include "load_a"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: number of rows.
    offs: vec4<u32>,
    // ne0 rounded up to a power of two.
    n_pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// i32 indices, as their (non-negative) bits.
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

var<private> base_a: u32;

var<workgroup> sidx: array<u32, {{SORT_MAX}}>;
var<workgroup> sval: array<f32, {{SORT_MAX}}>;

fn value(i: u32) -> f32 {
    return load_a(base_a + i * p.a.nb.x);
}

// Whether (x, i) sorts strictly before (y, j): by value in the row's order, ties by index.
fn before(x: f32, i: u32, y: f32, j: u32) -> bool {
#ifdef DESC
    return x > y || (x == y && i < j);
#else
    return x < y || (x == y && i < j);
#endif
}

// Order slots lo < hi.
fn compare_swap(lo: u32, hi: u32) {
    let i = sidx[lo];
    let j = sidx[hi];
    let x = sval[lo];
    let y = sval[hi];
    if (before(y, j, x, i)) {
        sidx[lo] = j;
        sidx[hi] = i;
        sval[lo] = y;
        sval[hi] = x;
    }
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let row = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (row >= p.offs.w) {
        return;
    }
    let r = unravel_row(row, p.a.ne);
    base_a = p.offs.y + dot(r, p.a.nb);
    let base_d = p.offs.x + dot(r, p.dst.nb);
    let n = p.a.ne.x;
    let n_pad = p.n_pad;

    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        sidx[i] = i;
        sval[i] = value(i);
    }
    workgroupBarrier();

    for (var k = 2u; k <= n_pad; k = k * 2u) {
        for (var j = k / 2u; j > 0u; j = j / 2u) {
            for (var t = lid; t < n_pad / 2u; t = t + {{WG_SIZE}}u) {
                let off = t % j;
                var lo: u32;
                var hi: u32;
                if (j == k / 2u) {
                    // Mirrored pairs of the k-block.
                    lo = (t / j) * k + off;
                    hi = (t / j) * k + k - 1u - off;
                } else {
                    lo = (t / j) * 2u * j + off;
                    hi = lo + j;
                }
                if (hi < n) {
                    compare_swap(lo, hi);
                }
            }
            workgroupBarrier();
        }
    }

    // Equal neighbours or NaN anywhere: ggml's order is not the network's.
    var tie = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let x = sval[i];
        if (is_nan(x) || (i + 1u < n && ordered_eq(x, sval[i + 1u]))) {
            tie = 1.0;
        }
    }
    let any_tie = reduce_max(lid, tie);
    if (any_tie != 0.0) {
        // ggml's exchange sort, by invocation 0, over the cached values.
        if (lid == 0u) {
            for (var i = 0u; i < n; i = i + 1u) {
                sidx[i] = i;
                sval[i] = value(i);
            }
            for (var j = 0u; j < n; j = j + 1u) {
                for (var k = j + 1u; k < n; k = k + 1u) {
#ifdef DESC
                    let swap = ordered_gt(sval[k], sval[j]);
#else
                    let swap = ordered_gt(sval[j], sval[k]);
#endif
                    if (swap) {
                        let ti = sidx[j];
                        sidx[j] = sidx[k];
                        sidx[k] = ti;
                        let tv = sval[j];
                        sval[j] = sval[k];
                        sval[k] = tv;
                    }
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        dst[base_d + i * p.dst.nb.x] = sidx[i];
    }
}
