// DUP, CPY, CONT between plain types, and out of quantized types: element l of dst in
// logical order (i0 fastest) is element l of src in logical order, converted. Shapes may
// differ; strides are any.
// - SRC_<T> / DST_<T> (F32, F16, BF16, I32, I16) name the types; SAME copies the bits;
//   floats convert through f32 (f16 and bf16 rounded to nearest even as ggml does), integers
//   through i32 (wrapping to i16 as a C cast), integer <-> float as Rust's `as` (saturating,
//   NaN -> 0).
// - DQ (with a QT_<TYPE> flag of dequant.wgsl): src is quantized rows (strides in bytes),
//   one invocation per four elements decoded by dq4, dst a float type.
// dst elements of 2 bytes share 32-bit words with their neighbours: a contiguous dst
// (DST_PAIRS) is written one whole word per invocation; any other 2-byte dst (and DQ's) with
// atomic read-modify-writes of the element's half (DST_ATOMIC).
#include "common"

struct Params {
    dst: Layout,
    src: Layout,
    // Offsets of dst (elements) and src (elements; bytes for DQ); z unused; w: invocations.
    offs: vec4<u32>,
    // Elements of dst.
    n: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> src: array<u32>;
#ifdef DST_ATOMIC
@group(0) @binding(2) var<storage, read_write> dst: array<atomic<u32>>;
#else
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
#endif

// ---- reading src ----

#ifdef SRC_F32
fn src_float(b: u32) -> f32 { return bitcast<f32>(b); }
#endif
#ifdef SRC_F16
fn src_float(b: u32) -> f32 { return half_to_f32(b, 0u); }
#endif
#ifdef SRC_BF16
fn src_float(b: u32) -> f32 { return bitcast<f32>(b << 16u); }
#endif
#ifdef SRC_I32
fn src_int(b: u32) -> i32 { return bitcast<i32>(b); }
#endif
#ifdef SRC_I16
fn src_int(b: u32) -> i32 { return bitcast<i32>(b << 16u) >> 16u; }
#endif

// ---- writing dst: the bits of one element (low 16 for 2-byte types) ----

#ifdef DST_F32
fn from_f32(f: f32) -> u32 { return bitcast<u32>(f); }
fn from_int(i: i32) -> u32 { return bitcast<u32>(f32(i)); }
#endif
#ifdef DST_F16
fn from_f32(f: f32) -> u32 { return f32_to_half(f); }
fn from_int(i: i32) -> u32 { return f32_to_half(f32(i)); }
#endif
#ifdef DST_BF16
fn from_f32(f: f32) -> u32 { return f32_to_bf16(f); }
fn from_int(i: i32) -> u32 { return f32_to_bf16(f32(i)); }
#endif
#ifdef DST_I32
fn from_f32(f: f32) -> u32 {
    if (f != f) {
        return 0u;
    }
    if (f >= 2147483648.0) {
        return 0x7fffffffu;
    }
    if (f <= -2147483648.0) {
        return 0x80000000u;
    }
    return bitcast<u32>(i32(f));
}
fn from_int(i: i32) -> u32 { return bitcast<u32>(i); }
#endif
#ifdef DST_I16
fn from_f32(f: f32) -> u32 {
    if (f != f) {
        return 0u;
    }
    return bitcast<u32>(i32(clamp(f, -32768.0, 32767.0))) & 0xffffu;
}
fn from_int(i: i32) -> u32 { return bitcast<u32>(i) & 0xffffu; }
#endif

fn store(e: u32, bits: u32) {
#ifdef DST_ATOMIC
    let shift = 16u * (e % 2u);
    atomicAnd(&dst[e / 2u], ~(0xffffu << shift));
    atomicOr(&dst[e / 2u], bits << shift);
#else
    dst[e] = bits;
#endif
}

#ifdef DQ
fn q_word(i: u32) -> u32 {
    return src[i];
}
#include "dequant"

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let l = 4u * i;
    let s = unravel(l, p.src.ne);
    let block = p.offs.y + s.y * p.src.nb.y + s.z * p.src.nb.z + s.w * p.src.nb.w + (s.x / QK) * QBYTES;
    let v = dq4(block, (s.x % QK) / 4u);
    for (var k = 0u; k < 4u; k = k + 1u) {
        store(p.offs.x + dot(unravel(l + k, p.dst.ne), p.dst.nb), from_f32(v[k]));
    }
}
#else

// Element l (logical order) of src as dst's bits.
fn value(l: u32) -> u32 {
    let e = p.offs.y + dot(unravel(l, p.src.ne), p.src.nb);
#ifdef SRC_2B
    let b = (src[e / 2u] >> (16u * (e % 2u))) & 0xffffu;
#else
    let b = src[e];
#endif
#ifdef SAME
    return b;
#else
#ifdef SRC_INT
    return from_int(src_int(b));
#else
    return from_f32(src_float(b));
#endif
#endif
}

#ifdef DST_PAIRS
// Invocation w writes word w of the words dst's elements span (dst is contiguous), keeping
// the half that belongs to a neighbour at either end.
@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let word = p.offs.x / 2u + i;
    var bits = 0u;
    for (var h = 0u; h < 2u; h = h + 1u) {
        let e = 2u * word + h;
        var v: u32;
        if (e >= p.offs.x && e - p.offs.x < p.n) {
            v = value(e - p.offs.x);
        } else {
            v = (dst[word] >> (16u * h)) & 0xffffu;
        }
        bits = bits | (v << (16u * h));
    }
    dst[word] = bits;
}
#else
@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let l = invocation_index(inv, {{WG_SIZE}}u);
    if (l >= p.offs.w) {
        return;
    }
    store(p.offs.x + dot(unravel(l, p.dst.ne), p.dst.nb), value(l));
}
#endif
#endif
