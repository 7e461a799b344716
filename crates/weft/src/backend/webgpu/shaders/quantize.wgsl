// CPY (DUP, CONT) from f32, f16 or bf16 into a quantized type: element l of dst in logical
// order is element l of src, and each block of dst is quantized as the CPU backend's
// from_float does it (ggml's quantize_row_<type>_ref; q8_0 as ggml's AVX quantize_row_q8_0,
// which the CPU backend matches), with GCC's fused multiply-adds where its x86 build fuses
// them. One invocation per block. QZ_<TYPE> names the type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL here; Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS, TQ1_0, TQ2_0 in quantize_k.wgsl, with
// QZ_SUPER; QZ_K45 adds Q4_K and Q5_K's shared code, QZ_IQ4 IQ4_NL and IQ4_XS's), SRC_<T>
// the source type. The grid I-quants (QZ_GRID, with QZ_SUPER; QZ_IQ1 for IQ1_S and IQ1_M)
// run quantize_iq.wgsl's entry point instead: a workgroup per block.
// Blocks are 18 to 210 bytes, so neighbouring blocks share 32-bit words: words a block only
// partly covers are merged with atomics.
#include "common"

struct Params {
    dst: Layout,
    src: Layout,
    // x: byte offset of dst; y: element offset of src; z: 0 (see opaque); w: blocks.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;

#ifdef QZ_Q4_0
const QK: u32 = 32u;
const QBYTES: u32 = 18u;
#endif
#ifdef QZ_Q4_1
const QK: u32 = 32u;
const QBYTES: u32 = 20u;
#endif
#ifdef QZ_Q5_0
const QK: u32 = 32u;
const QBYTES: u32 = 22u;
#endif
#ifdef QZ_Q5_1
const QK: u32 = 32u;
const QBYTES: u32 = 24u;
#endif
#ifdef QZ_Q8_0
const QK: u32 = 32u;
const QBYTES: u32 = 34u;
#endif
#ifdef QZ_IQ4
#include "iq_tables"
#endif
#ifdef QZ_IQ4_NL
const QK: u32 = 32u;
const QBYTES: u32 = 18u;
#endif
#ifdef QZ_Q2_K
const QK: u32 = 256u;
const QBYTES: u32 = 84u;
#endif
#ifdef QZ_Q3_K
const QK: u32 = 256u;
const QBYTES: u32 = 110u;
#endif
#ifdef QZ_Q4_K
const QK: u32 = 256u;
const QBYTES: u32 = 144u;
#endif
#ifdef QZ_Q5_K
const QK: u32 = 256u;
const QBYTES: u32 = 176u;
#endif
#ifdef QZ_Q6_K
const QK: u32 = 256u;
const QBYTES: u32 = 210u;
#endif
#ifdef QZ_TQ1_0
const QK: u32 = 256u;
const QBYTES: u32 = 54u;
#endif
#ifdef QZ_TQ2_0
const QK: u32 = 256u;
const QBYTES: u32 = 66u;
#endif
#ifdef QZ_IQ4_XS
const QK: u32 = 256u;
const QBYTES: u32 = 136u;
#endif

#ifdef QZ_IQ2_XXS
const QK: u32 = 256u;
const QBYTES: u32 = 66u;
#endif
#ifdef QZ_IQ2_XS
const QK: u32 = 256u;
const QBYTES: u32 = 74u;
#endif
#ifdef QZ_IQ2_S
const QK: u32 = 256u;
const QBYTES: u32 = 82u;
#endif
#ifdef QZ_IQ3_XXS
const QK: u32 = 256u;
const QBYTES: u32 = 98u;
#endif
#ifdef QZ_IQ3_S
const QK: u32 = 256u;
const QBYTES: u32 = 110u;
#endif
#ifdef QZ_IQ1_S
const QK: u32 = 256u;
const QBYTES: u32 = 50u;
#endif
#ifdef QZ_IQ1_M
const QK: u32 = 256u;
const QBYTES: u32 = 56u;
#endif

// The block's source values (shared by the workgroup of a grid quantizer) and its bytes,
// one per u32.
#ifdef QZ_GRID
var<workgroup> x: array<f32, QK>;
#else
var<private> x: array<f32, QK>;
#endif
var<private> blk: array<u32, QBYTES>;
// The block's levels (signed where a search works with signed ones), and the weights of the
// sub-block being fitted.
var<private> lv: array<i32, QK>;
var<private> wts: array<f32, 32>;

const GROUP_MAX_EPS: f32 = 1e-15;

fn load(e: u32) -> f32 {
#ifdef SRC_F16
    return half_to_f32(src[e / 2u], e);
#else
#ifdef SRC_BF16
    return bf16_to_f32(src[e / 2u], e);
#else
    return bitcast<f32>(src[e]);
#endif
#endif
}

fn put_u16(k: u32, v: u32) {
    blk[k] = v & 0xffu;
    blk[k + 1u] = (v >> 8u) & 0xffu;
}

fn put_u32(k: u32, v: u32) {
    put_u16(k, v);
    put_u16(k + 2u, v >> 16u);
}

// p.offs.z, which is 0, passed through a value: the compiler cannot see that opaque(v) is
// v, so it cannot apply the algebra (s - (s - a) = a) that would undo the error-free
// transformations below. (lavapipe's optimizer does, on the plain forms.)
fn opaque(v: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(v) ^ p.offs.z);
}

// Knuth's TwoSum: s + e == a + b exactly (round-to-nearest adds).
fn two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = opaque(a + b);
    let bb = opaque(s - a);
    return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

// Veltkamp's split: hi + lo == a, each with at most 12 significant bits.
fn split(a: f32) -> vec2<f32> {
    let c = 4097.0 * a;
    let hi = c - opaque(c - a);
    return vec2<f32>(hi, a - hi);
}

// Dekker's TwoProduct: p + e == a * b exactly (barring overflow and underflow).
fn two_prod(a: f32, b: f32) -> vec2<f32> {
    let p = a * b;
    let x = split(a);
    let y = split(b);
    let e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
    return vec2<f32>(p, e);
}

// a + b rounded to odd: the nearest sum when it is exact, else of the two floats around
// the exact sum the one whose last bit is odd.
fn add_odd(a: f32, b: f32) -> f32 {
    let s = two_sum(a, b);
    let bits = bitcast<u32>(s.x);
    if (s.y == 0.0 || (bits & 1u) == 1u) {
        return s.x;
    }
    // One ulp toward the exact sum: away from zero when the error has the sum's sign.
    return bitcast<f32>(select(bits - 1u, bits + 1u, (s.y > 0.0) == (s.x > 0.0)));
}

// a * b + c rounded once, as a hardware fma computes it (Boldo and Melquiond's emulation:
// the exact product, an exact sum, and the two low parts added rounding to odd). WGSL's
// fma() may round the product first (lavapipe's does), and the quantizers must reproduce
// the CPU's fused arithmetic bit for bit. Exact while the product neither overflows nor
// underflows (|a b| between 2^-100 and 2^100 or so), which quantizer inputs keep to. The
// operands pass through opaque too: constants folded into the steps (a search's 0.1, the
// rounding constant) let the optimizer reassociate them and lose the low parts.
fn fma_exact(a: f32, b: f32, c: f32) -> f32 {
    let u = two_prod(opaque(a), opaque(b));
    let t = two_sum(opaque(c), u.x);
    return t.x + add_odd(t.y, u.y);
}

// C's float -> int conversion as x86's cvttss2si: truncation, i32::MIN for NaN and out of
// range.
fn trunc_i32(v: f32) -> i32 {
    if (!(v >= -2147483648.0 && v < 2147483648.0)) {
        return i32(-2147483647 - 1);
    }
    return i32(v);
}

// C's (int8_t)(v): truncation, then the low byte.
fn to_i8(v: f32) -> i32 {
    return bitcast<i32>(bitcast<u32>(trunc_i32(v)) << 24u) >> 24u;
}

// C's MAX(a, b) (and x86's maxps): the second operand unless the first is greater.
fn c_max(a: f32, b: f32) -> f32 {
    return select(b, a, a > b);
}

// The value of largest magnitude among x[off..off + n] (the first on ties) and that magnitude.
fn absmax_of(off: u32, n: u32) -> vec2<f32> {
    var amax = 0.0;
    var mx = 0.0;
    for (var i = 0u; i < n; i = i + 1u) {
        let a = abs(x[off + i]);
        if (a > amax) {
            amax = a;
            mx = x[off + i];
        }
    }
    return vec2<f32>(mx, amax);
}

// The 32 levels l (element t of the block in l[t], < 32) packed as ggml does: low nibbles of
// t and t + 16 in byte k0 + t, bit 4 of level t in bit t of the u32 at qh (when q5).
fn pack_levels(l: ptr<function, array<u32, 32>>, k0: u32, qh: u32, q5: bool) {
    var h = 0u;
    for (var t = 0u; t < 16u; t = t + 1u) {
        let l0 = (*l)[t];
        let l1 = (*l)[t + 16u];
        blk[k0 + t] = (l0 & 0xfu) | ((l1 & 0xfu) << 4u);
        h = h | (((l0 >> 4u) & 1u) << t) | (((l1 >> 4u) & 1u) << (t + 16u));
    }
    if (q5) {
        put_u32(qh, h);
    }
}

// quantize_row_q4_0_ref / q5_0_ref: d = max / -2^(bits-1), levels x/d + 2^(bits-1)
// truncated after adding 0.5 (fused: fma_exact(x, id, half + 0.5)).
fn quantize_symmetric(bits: u32, qh: u32, qs: u32) {
    let half = f32(1u << (bits - 1u));
    let top = i32((1u << bits) - 1u);
    let m = absmax_of(0u, 32u);
    let d = m.x / -half;
    let id = select(0.0, 1.0 / d, d != 0.0);
    var l: array<u32, 32>;
    for (var t = 0u; t < 32u; t = t + 1u) {
        l[t] = bitcast<u32>(min(top, to_i8(fma_exact(x[t], id, half + 0.5)))) & 0xffu;
    }
    put_u16(0u, f32_to_half(d));
    pack_levels(&l, qs, qh, bits == 5u);
}

// quantize_row_q4_1_ref / q5_1_ref: d = (max - min) / (2^bits - 1), levels (x - min)/d
// truncated after adding 0.5 (fused), q4_1 clamped to 15, q5_1 not clamped.
fn quantize_affine(bits: u32, qh: u32, qs: u32) {
    var mn = 3.40282347e38;
    var mx = -3.40282347e38;
    for (var t = 0u; t < 32u; t = t + 1u) {
        if (x[t] < mn) {
            mn = x[t];
        }
        if (x[t] > mx) {
            mx = x[t];
        }
    }
    let d = (mx - mn) / f32((1u << bits) - 1u);
    let id = select(0.0, 1.0 / d, d != 0.0);
    var l: array<u32, 32>;
    for (var t = 0u; t < 32u; t = t + 1u) {
        let v = fma_exact(x[t] - mn, id, 0.5);
        if (bits == 4u) {
            l[t] = bitcast<u32>(min(15, to_i8(v))) & 0xffu;
        } else {
            l[t] = bitcast<u32>(trunc_i32(v)) & 0xffu;
        }
    }
    put_u16(0u, f32_to_half(d));
    put_u16(2u, f32_to_half(mn));
    pack_levels(&l, qs, qh, bits == 5u);
}

#ifdef QZ_Q8_0
// ggml's AVX quantize_row_q8_0: max |x| reduced in its lane order, multiplier 127 / amax,
// levels rounded half to even and saturated to int8.
fn quantize_q8_0() {
    var lanes: array<f32, 8>;
    for (var j = 0u; j < 8u; j = j + 1u) {
        var m = abs(x[j]);
        for (var v = 1u; v < 4u; v = v + 1u) {
            m = c_max(m, abs(x[8u * v + j]));
        }
        lanes[j] = m;
    }
    let m0 = c_max(lanes[4], lanes[0]);
    let m1 = c_max(lanes[5], lanes[1]);
    let m2 = c_max(lanes[6], lanes[2]);
    let m3 = c_max(lanes[7], lanes[3]);
    let amax = c_max(c_max(m0, m2), c_max(m1, m3));
    let d = amax / 127.0;
    let id = select(0.0, 127.0 / amax, amax != 0.0);
    put_u16(0u, f32_to_half(d));
    for (var t = 0u; t < 32u; t = t + 1u) {
        let q = clamp(trunc_i32(round(x[t] * id)), -128, 127);
        blk[2u + t] = bitcast<u32>(q) & 0xffu;
    }
}
#endif

#ifdef QZ_IQ4
// best_index_int8: the level of kvalues_iq4nl nearest to v (binary search; ties go up).
fn best_index(v: f32) -> u32 {
    if (v <= KVALUES_IQ4NL[0]) {
        return 0u;
    }
    if (v >= KVALUES_IQ4NL[15]) {
        return 15u;
    }
    var ml = 0u;
    var mu = 15u;
    while (mu - ml > 1u) {
        let mav = (ml + mu) / 2u;
        if (v < KVALUES_IQ4NL[mav]) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    return select(mu, mu - 1u, v - KVALUES_IQ4NL[mu - 1u] < KVALUES_IQ4NL[mu] - v);
}

// quantize_row_iq4_nl_impl's fit of 32 elements at off to the levels nearest id * x, weights
// wts: (sum q x w, sum q^2 w), the sums fused; with store, the levels go to lv.
fn fit_iq4(off: u32, id: f32, store: bool) -> vec2<f32> {
    var sumqx = 0.0;
    var sumq2 = 0.0;
    for (var t = 0u; t < 32u; t = t + 1u) {
        let li = best_index(id * x[off + t]);
        if (store) {
            lv[off + t] = i32(li);
        }
        let q = KVALUES_IQ4NL[li];
        let wq = wts[t] * q;
        sumqx = fma_exact(x[off + t], wq, sumqx);
        sumq2 = fma_exact(q, wq, sumq2);
    }
    return vec2<f32>(sumqx, sumq2);
}

// Levels lv of n elements as nibbles at byte k0: in each 32, elements j and j + 16 share a byte.
fn pack_iq4(k0: u32, n: u32) {
    for (var t = 0u; t < n / 2u; t = t + 1u) {
        let e = 32u * (t / 16u) + t % 16u;
        blk[k0 + t] = bitcast<u32>(lv[e]) | (bitcast<u32>(lv[e + 16u]) << 4u);
    }
}
#endif

#ifdef QZ_IQ4_NL
// quantize_row_iq4_nl_ref: weights x^2, the scale max / -127 refined once by weighted
// least squares, no further search.
fn quantize_iq4_nl() {
    let m = absmax_of(0u, 32u);
    var d = 0.0;
    if (m.y >= GROUP_MAX_EPS) {
        for (var t = 0u; t < 32u; t = t + 1u) {
            wts[t] = x[t] * x[t];
        }
        let s = fit_iq4(0u, 1.0 / (m.x / KVALUES_IQ4NL[0]), true);
        d = s.x / s.y;
    }
    put_u16(0u, f32_to_half(d));
    pack_iq4(2u, 32u);
}
#endif

#ifdef QZ_SUPER
#include "quantize_k"
#endif
#ifdef QZ_GRID
#include "quantize_iq"
#endif

// Merge the block's bytes into dst at byte `byte`.
fn store_block(byte: u32) {
    let first = byte / 4u;
    let last = (byte + QBYTES - 1u) / 4u;
    for (var w = first; w <= last; w = w + 1u) {
        var val = 0u;
        var mask = 0u;
        for (var k = 0u; k < 4u; k = k + 1u) {
            let b = 4u * w + k;
            if (b >= byte && b < byte + QBYTES) {
                val = val | (blk[b - byte] << (8u * k));
                mask = mask | (0xffu << (8u * k));
            }
        }
        if (mask == 0xffffffffu) {
            atomicStore(&dst[w], val);
        } else {
            atomicAnd(&dst[w], ~mask);
            atomicOr(&dst[w], val);
        }
    }
}

#ifndef QZ_GRID
@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let per_row = p.dst.ne.x / QK;
    let r = unravel_row(i / per_row, p.dst.ne);
    let b = i % per_row;
    let l0 = (i / per_row) * p.dst.ne.x + b * QK;
    for (var t = 0u; t < QK; t = t + 1u) {
        x[t] = load(p.offs.y + dot(unravel(l0 + t, p.src.ne), p.src.nb));
    }
#ifdef QZ_Q4_0
    quantize_symmetric(4u, 0u, 2u);
#endif
#ifdef QZ_Q5_0
    quantize_symmetric(5u, 2u, 6u);
#endif
#ifdef QZ_Q4_1
    quantize_affine(4u, 0u, 4u);
#endif
#ifdef QZ_Q5_1
    quantize_affine(5u, 4u, 8u);
#endif
#ifdef QZ_Q8_0
    quantize_q8_0();
#endif
#ifdef QZ_IQ4_NL
    quantize_iq4_nl();
#endif
#ifdef QZ_Q2_K
    quantize_q2_k();
#endif
#ifdef QZ_Q3_K
    quantize_q3_k();
#endif
#ifdef QZ_Q4_K
    quantize_k45(15, -1.0, 20, 16u);
#endif
#ifdef QZ_Q5_K
    quantize_k45(31, -0.5, 15, 48u);
#endif
#ifdef QZ_Q6_K
    quantize_q6_k();
#endif
#ifdef QZ_TQ1_0
    quantize_tq1_0();
#endif
#ifdef QZ_TQ2_0
    quantize_tq2_0();
#endif
#ifdef QZ_IQ4_XS
    quantize_iq4_xs();
#endif
    store_block(p.offs.x + r.y * p.dst.nb.y + r.z * p.dst.nb.z + r.w * p.dst.nb.w + b * QBYTES);
}
#endif
