// Layout ops that place source elements at new coordinates of dst: CONCAT (TWO_SRC), PAD,
// UPSCALE, WIN_PART, WIN_UNPART, GET_REL_POS. MAP names the function giving, for a dst
// coordinate, the source (0: a, 1: b) and its coordinate there, or NONE for a zero.
// Elements are copied as bits, ES bytes each (1, 2, 4 or 8), so any plain type works and
// nothing is converted. Every tensor is bound as 32-bit words: 8-byte elements are two
// words, and 1- and 2-byte elements share words, which dst writes with atomics so that
// neighbouring invocations never undo each other's bytes. One invocation per dst element.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // The op's integers: CONCAT (dim), WIN_PART (npx, w), WIN_UNPART (w, npx).
    u: vec4<u32>,
    // UPSCALE: the scale factor of each dim (dst.ne / a.ne in f32).
    f: vec4<f32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#ifdef TWO_SRC
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
#endif
#ifdef SUBWORD
@group(0) @binding(3) var<storage, read_write> dst: array<atomic<u32>>;
#else
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;
#endif

const NONE: u32 = 2u;

// Where a dst element comes from: source k (0, 1, or NONE) at coordinate c.
struct Src {
    k: u32,
    c: vec4<u32>,
}

fn map_concat(i: vec4<u32>) -> Src {
    let dim = p.u.x;
    var c = i;
    if (c[dim] < p.a.ne[dim]) {
        return Src(0u, c);
    }
    c[dim] = c[dim] - p.a.ne[dim];
    return Src(1u, c);
}

// Zeros appended at the end of every dim.
fn map_pad(i: vec4<u32>) -> Src {
    if (all(i < p.a.ne)) {
        return Src(0u, i);
    }
    return Src(NONE, i);
}

// Nearest neighbour: source index (i / sf) truncated, in f32 as ggml computes it, kept
// inside a.
fn map_upscale(i: vec4<u32>) -> Src {
    let c = vec4<u32>(vec4<f32>(i) / p.f);
    return Src(0u, min(c, max(p.a.ne, vec4<u32>(1u)) - vec4<u32>(1u)));
}

// dst [C, w, w, npx*npy]: window i3 = py*npx + px holds a's pixels (px*w + i1, py*w + i2),
// zero past a's edge.
fn map_win_part(i: vec4<u32>) -> Src {
    let npx = p.u.x;
    let w = p.u.y;
    let x = (i.w % npx) * w + i.y;
    let y = (i.w / npx) * w + i.z;
    if (x < p.a.ne.y && y < p.a.ne.z) {
        return Src(0u, vec4<u32>(i.x, x, y, 0u));
    }
    return Src(NONE, i);
}

// dst [C, w0, h0]: pixel (i1, i2) is pixel (i1 % w, i2 % w) of window (i2 / w)*npx + i1 / w.
fn map_win_unpart(i: vec4<u32>) -> Src {
    let w = p.u.x;
    let npx = p.u.y;
    return Src(0u, vec4<u32>(i.x, i.y % w, i.z % w, (i.z / w) * npx + i.y / w));
}

// dst [C, kh, qh]: row (i1, i2) is a's row (kh - 1 - i1) + i2.
fn map_get_rel_pos(i: vec4<u32>) -> Src {
    return Src(0u, vec4<u32>(i.x, p.dst.ne.y - 1u - i.y + i.z, 0u, 0u));
}

// The element of source k at element index e, as bits in the low ES bytes (ES 8: two words).
fn word_of(k: u32, w: u32) -> u32 {
#ifdef TWO_SRC
    if (k == 1u) {
        return b[w];
    }
#endif
    return a[w];
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let s = {{MAP}}(idx);
    let e = p.offs.x + dot(idx, p.dst.nb);
    var e_src = 0u;
    if (s.k == 0u) {
        e_src = p.offs.y + dot(s.c, p.a.nb);
    } else if (s.k == 1u) {
        e_src = p.offs.z + dot(s.c, p.b.nb);
    }
#ifdef SUBWORD
    // ES = 1 or 2: the element's bits inside its word, written with atomics.
    let per_word = 4u / {{ES}}u;
    let bits = 8u * {{ES}}u;
    let mask = (0xffffffffu >> (32u - bits));
    var v = 0u;
    if (s.k != NONE) {
        v = (word_of(s.k, e_src / per_word) >> (bits * (e_src % per_word))) & mask;
    }
    let shift = bits * (e % per_word);
    atomicAnd(&dst[e / per_word], ~(mask << shift));
    atomicOr(&dst[e / per_word], v << shift);
#else
    // ES = 4 or 8: whole words.
    let words = {{ES}}u / 4u;
    for (var j = 0u; j < words; j = j + 1u) {
        var v = 0u;
        if (s.k != NONE) {
            v = word_of(s.k, e_src * words + j);
        }
        dst[e * words + j] = v;
    }
#endif
}
