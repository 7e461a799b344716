// ARGSORT: each row's permutation that sorts a (any float type through load_a) ascending,
// or descending with DESC, as i32. One workgroup per row runs a bitonic sort of the row's
// indices, padded to a power of two n_pad: in workgroup memory with LOCAL (n_pad <=
// {{SORT_MAX}}, values cached beside the indices), else in dst itself (any row length).
//
// The network is the "flip" form (every comparator puts the smaller key first; the first
// stage of each merge compares mirrored pairs), so the padding never moves: a comparator
// reaching past n would find a virtual +inf above it, and is skipped.
//
// ggml sorts with an unstable exchange sort, so its order among equal values (and around
// NaN) depends on the whole row. A row with no NaN and no two equal values has one sorted
// order, which the network finds; a row with either is re-sorted by invocation 0 replaying
// ggml's exchange sort, as the CPU backend does (rows up to EXCHANGE_MAX long; longer ones
// keep the network's order, which breaks ties by index).
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

const EXCHANGE_MAX: u32 = 4096u;

var<private> base_a: u32;
var<private> base_d: u32;

#ifdef LOCAL
var<workgroup> sidx: array<u32, {{SORT_MAX}}>;
var<workgroup> sval: array<f32, {{SORT_MAX}}>;
#endif

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

fn slot_index(s: u32) -> u32 {
#ifdef LOCAL
    return sidx[s];
#else
    return dst[base_d + s * p.dst.nb.x];
#endif
}

fn slot_value(s: u32) -> f32 {
#ifdef LOCAL
    return sval[s];
#else
    return value(dst[base_d + s * p.dst.nb.x]);
#endif
}

// Order slots lo < hi.
fn compare_swap(lo: u32, hi: u32) {
    let i = slot_index(lo);
    let j = slot_index(hi);
    let x = slot_value(lo);
    let y = slot_value(hi);
    if (before(y, j, x, i)) {
#ifdef LOCAL
        sidx[lo] = j;
        sidx[hi] = i;
        sval[lo] = y;
        sval[hi] = x;
#else
        dst[base_d + lo * p.dst.nb.x] = j;
        dst[base_d + hi * p.dst.nb.x] = i;
#endif
    }
}

fn sort_barrier() {
#ifdef LOCAL
    workgroupBarrier();
#else
    storageBarrier();
#endif
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
    base_d = p.offs.x + dot(r, p.dst.nb);
    let n = p.a.ne.x;
    let n_pad = p.n_pad;

    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
#ifdef LOCAL
        sidx[i] = i;
        sval[i] = value(i);
#else
        dst[base_d + i * p.dst.nb.x] = i;
#endif
    }
    sort_barrier();

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
            sort_barrier();
        }
    }

#ifdef LOCAL
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        dst[base_d + i * p.dst.nb.x] = sidx[i];
    }
#endif

    // Equal neighbours or NaN anywhere: ggml's order is not the network's.
    var tie = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        let x = slot_value(i);
        if (x != x || (i + 1u < n && x == slot_value(i + 1u))) {
            tie = 1.0;
        }
    }
    let any_tie = reduce_max(lid, tie);
    // The sorted row is in dst before invocation 0 rewrites it.
    storageBarrier();
    if (lid != 0u || any_tie == 0.0 || n > EXCHANGE_MAX) {
        return;
    }
    for (var i = 0u; i < n; i = i + 1u) {
        dst[base_d + i * p.dst.nb.x] = i;
    }
    for (var j = 0u; j < n; j = j + 1u) {
        for (var k = j + 1u; k < n; k = k + 1u) {
            let dj = base_d + j * p.dst.nb.x;
            let dk = base_d + k * p.dst.nb.x;
            let u = value(dst[dj]);
            let v = value(dst[dk]);
#ifdef DESC
            let swap = u < v;
#else
            let swap = u > v;
#endif
            if (swap) {
                let t = dst[dj];
                dst[dj] = dst[dk];
                dst[dk] = t;
            }
        }
    }
}
