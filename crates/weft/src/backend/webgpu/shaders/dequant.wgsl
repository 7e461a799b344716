// Dequantization of ggml's block formats (and of the float types, as blocks of four), for
// any shader that reads a quantized, f16 or bf16 tensor: `#include "common"` first, then
// define `fn q_word(i: u32) -> u32` (32-bit word i of the tensor's binding), then
// `#include "dequant"` with exactly one of the flags QT_<TYPE> defined (ggml's type name in
// upper case: QT_Q4_0 ... QT_TQ2_0, QT_F32, QT_F16, QT_BF16; ops/quant.rs's qt_flag).
//
// Every section defines:
//   const QK: u32       elements per block (32 or 256; the float types: 4)
//   const QBYTES: u32   bytes per block
//   fn dq4(block_byte: u32, j: u32) -> vec4<f32>
//       elements 4j .. 4j+3 (j < QK/4) of the block starting at byte `block_byte` of the
//       binding, in the order ggml's dequantize_row_<type> writes them and with its
//       arithmetic (int -> f32, then the scale products in C's left-to-right order).
// Blocks start at any byte offset (a row of 18-byte Q4_0 blocks is not word-aligned), so
// every multi-byte field is read through q_u16 / q_u32, which handle any offset.

// Byte `byte` of the binding.
fn q_byte(byte: u32) -> u32 {
    return (q_word(byte >> 2u) >> ((byte & 3u) * 8u)) & 0xffu;
}

// The little-endian u16 at any byte offset.
fn q_u16(byte: u32) -> u32 {
    let s = (byte & 3u) * 8u;
    let w = q_word(byte >> 2u);
    if (s == 24u) {
        return (w >> 24u) | ((q_word((byte >> 2u) + 1u) & 0xffu) << 8u);
    }
    return (w >> s) & 0xffffu;
}

// The little-endian u32 at any byte offset.
fn q_u32(byte: u32) -> u32 {
    let s = (byte & 3u) * 8u;
    let w = q_word(byte >> 2u);
    if (s == 0u) {
        return w;
    }
    return (w >> s) | (q_word((byte >> 2u) + 1u) << (32u - s));
}

// The f16 at any even (or odd) byte offset, as f32 (exact).
fn q_f16(byte: u32) -> f32 {
    return half_to_f32(q_u16(byte), 0u);
}

// The four bytes of w, lowest first.
fn q_bytes4(w: u32) -> vec4<u32> {
    return (vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu);
}

// The four bytes of w as int8 values, lowest first.
fn q_sbytes4(w: u32) -> vec4<i32> {
    return bitcast<vec4<i32>>(vec4<u32>(w) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u);
}

// The low (hi == false) or high nibbles of the four bytes of w.
fn q_nibbles4(w: u32, hi: bool) -> vec4<u32> {
    return (q_bytes4(w) >> vec4<u32>(select(0u, 4u, hi))) & vec4<u32>(0xfu);
}

// +1 or -1 for bits j0 .. j0+3 of a sign byte (a set bit is -1), as ggml's
// `signs & kmask_iq2xs[j] ? -1.f : 1.f`.
fn q_signs4(signs: u32, j0: u32) -> vec4<f32> {
    let bits = (vec4<u32>(signs) >> (vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u))) & vec4<u32>(1u);
    return select(vec4<f32>(1.0), vec4<f32>(-1.0), bits != vec4<u32>(0u));
}

// ggml's get_scale_min_k4: 6-bit scale (x) and min (y) of sub-block j (0..8) from the 12
// scale bytes at `sb` (Q4_K, Q5_K).
fn q_scale_min_k4(sb: u32, j: u32) -> vec2<u32> {
    if (j < 4u) {
        return vec2<u32>(q_byte(sb + j) & 63u, q_byte(sb + j + 4u) & 63u);
    }
    let b = q_byte(sb + j + 4u);
    return vec2<u32>((b & 0xfu) | ((q_byte(sb + j - 4u) >> 6u) << 4u), (b >> 4u) | ((q_byte(sb + j) >> 6u) << 4u));
}

// ---- float types: "blocks" of four elements ----

#ifdef QT_F32
const QK: u32 = 4u;
const QBYTES: u32 = 16u;
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let b = block_byte + 16u * j;
    return bitcast<vec4<f32>>(vec4<u32>(q_u32(b), q_u32(b + 4u), q_u32(b + 8u), q_u32(b + 12u)));
}
#endif

#ifdef QT_F16
const QK: u32 = 4u;
const QBYTES: u32 = 8u;
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let lo = q_u32(block_byte + 8u * j);
    let hi = q_u32(block_byte + 8u * j + 4u);
    return vec4<f32>(half_to_f32(lo, 0u), half_to_f32(lo, 1u), half_to_f32(hi, 0u), half_to_f32(hi, 1u));
}
#endif

#ifdef QT_BF16
const QK: u32 = 4u;
const QBYTES: u32 = 8u;
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let lo = q_u32(block_byte + 8u * j);
    let hi = q_u32(block_byte + 8u * j + 4u);
    return vec4<f32>(bf16_to_f32(lo, 0u), bf16_to_f32(lo, 1u), bf16_to_f32(hi, 0u), bf16_to_f32(hi, 1u));
}
#endif

// ---- the 32-element formats ----
// Element e < 16 is the low nibble of qs[e], element e >= 16 the high nibble of qs[e - 16];
// Q5's fifth bit of element e is bit e of the u32 qh.

#ifdef QT_Q4_0
const QK: u32 = 32u;
const QBYTES: u32 = 18u;
// d: f16 at 0, qs[16] at 2.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let d = q_f16(block_byte);
    let n = q_nibbles4(q_u32(block_byte + 2u + 4u * (j % 4u)), j >= 4u);
    return (vec4<f32>(n) - 8.0) * d;
}
#endif

#ifdef QT_Q4_1
const QK: u32 = 32u;
const QBYTES: u32 = 20u;
// d at 0, m at 2, qs[16] at 4.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let d = q_f16(block_byte);
    let m = q_f16(block_byte + 2u);
    let n = q_nibbles4(q_u32(block_byte + 4u + 4u * (j % 4u)), j >= 4u);
    return vec4<f32>(n) * d + m;
}
#endif

#ifdef QT_Q5_0
const QK: u32 = 32u;
const QBYTES: u32 = 22u;
// d at 0, qh (u32) at 2, qs[16] at 6.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let d = q_f16(block_byte);
    let qh = q_u32(block_byte + 2u);
    let h = (vec4<u32>(qh) >> (vec4<u32>(4u * j) + vec4<u32>(0u, 1u, 2u, 3u))) & vec4<u32>(1u);
    let n = q_nibbles4(q_u32(block_byte + 6u + 4u * (j % 4u)), j >= 4u) | (h << vec4<u32>(4u));
    return (vec4<f32>(n) - 16.0) * d;
}
#endif

#ifdef QT_Q5_1
const QK: u32 = 32u;
const QBYTES: u32 = 24u;
// d at 0, m at 2, qh (u32) at 4, qs[16] at 8.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let d = q_f16(block_byte);
    let m = q_f16(block_byte + 2u);
    let qh = q_u32(block_byte + 4u);
    let h = (vec4<u32>(qh) >> (vec4<u32>(4u * j) + vec4<u32>(0u, 1u, 2u, 3u))) & vec4<u32>(1u);
    let n = q_nibbles4(q_u32(block_byte + 8u + 4u * (j % 4u)), j >= 4u) | (h << vec4<u32>(4u));
    return vec4<f32>(n) * d + m;
}
#endif

#ifdef QT_Q8_0
const QK: u32 = 32u;
const QBYTES: u32 = 34u;
// d at 0, qs[32] (int8) at 2.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let d = q_f16(block_byte);
    return vec4<f32>(q_sbytes4(q_u32(block_byte + 2u + 4u * j))) * d;
}
#endif

// ---- K-quants: 256-element super-blocks ----

#ifdef QT_Q2_K
const QK: u32 = 256u;
const QBYTES: u32 = 84u;
// scales[16] at 0 (scale: low nibble, min: high nibble, one per 16 elements), qs[64] at 16,
// d at 80, dmin at 82. Element e: 2 bits at shift 2 * ((e % 128) / 32) of qs[32 * (e / 128) + e % 32].
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let sc = q_byte(block_byte + e / 16u);
    let dl = q_f16(block_byte + 80u) * f32(sc & 0xfu);
    let ml = q_f16(block_byte + 82u) * f32(sc >> 4u);
    let shift = 2u * ((e % 128u) / 32u);
    let q = (q_bytes4(q_u32(block_byte + 16u + 32u * (e / 128u) + e % 32u)) >> vec4<u32>(shift)) & vec4<u32>(3u);
    return dl * vec4<f32>(q) - ml;
}
#endif

#ifdef QT_Q3_K
const QK: u32 = 256u;
const QBYTES: u32 = 110u;
// hmask[32] at 0, qs[64] at 32, scales[12] at 96 (16 6-bit scales: low 4 bits in the nibbles
// of bytes 0..8, the top 2 bits of scale s at shift 2 * (s / 4) of byte 8 + s % 4), d at 108.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let s = e / 16u;
    var low: u32;
    if (s < 8u) {
        low = q_byte(block_byte + 96u + s) & 0xfu;
    } else {
        low = q_byte(block_byte + 96u + s - 8u) >> 4u;
    }
    let high = (q_byte(block_byte + 104u + s % 4u) >> (2u * (s / 4u))) & 3u;
    let dl = q_f16(block_byte + 108u) * f32(i32(low | (high << 4u)) - 32);
    let hf = e / 128u;
    let quarter = (e % 128u) / 32u;
    let q = (q_bytes4(q_u32(block_byte + 32u + 32u * hf + e % 32u)) >> vec4<u32>(2u * quarter)) & vec4<u32>(3u);
    let m = 1u << (4u * hf + quarter);
    let hm = q_bytes4(q_u32(block_byte + e % 32u)) & vec4<u32>(m);
    let sub = select(vec4<i32>(4), vec4<i32>(0), hm != vec4<u32>(0u));
    return dl * vec4<f32>(vec4<i32>(q) - sub);
}
#endif

#ifdef QT_Q4_K
const QK: u32 = 256u;
const QBYTES: u32 = 144u;
// d at 0, dmin at 2, scales[12] at 4, qs[128] at 16: per 64 elements c, 32 bytes whose low
// nibbles are elements 0..32 (sub-block 2c) and high nibbles 32..64 (sub-block 2c + 1).
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let c = e / 64u;
    let hi = (e % 64u) >= 32u;
    let sm = q_scale_min_k4(block_byte + 4u, 2u * c + select(0u, 1u, hi));
    let d1 = q_f16(block_byte) * f32(sm.x);
    let m1 = q_f16(block_byte + 2u) * f32(sm.y);
    let q = q_nibbles4(q_u32(block_byte + 16u + 32u * c + e % 32u), hi);
    return d1 * vec4<f32>(q) - m1;
}
#endif

#ifdef QT_Q5_K
const QK: u32 = 256u;
const QBYTES: u32 = 176u;
// d at 0, dmin at 2, scales[12] at 4, qh[32] at 16, qs[128] at 48; Q4_K's layout plus a
// fifth bit: bit 2c (low nibbles) or 2c + 1 (high) of qh[e % 32].
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let c = e / 64u;
    let hi = (e % 64u) >= 32u;
    let sub = 2u * c + select(0u, 1u, hi);
    let sm = q_scale_min_k4(block_byte + 4u, sub);
    let d1 = q_f16(block_byte) * f32(sm.x);
    let m1 = q_f16(block_byte + 2u) * f32(sm.y);
    let qh = q_bytes4(q_u32(block_byte + 16u + e % 32u)) & vec4<u32>(1u << sub);
    let q = q_nibbles4(q_u32(block_byte + 48u + 32u * c + e % 32u), hi)
        + select(vec4<u32>(0u), vec4<u32>(16u), qh != vec4<u32>(0u));
    return d1 * vec4<f32>(q) - m1;
}
#endif

#ifdef QT_Q6_K
const QK: u32 = 256u;
const QBYTES: u32 = 210u;
// ql[128] at 0, qh[64] at 128, scales[16] (int8) at 192, d at 208. Per 128 elements n, in
// quarters k of 32: low 4 bits in ql[64n + l + 32 (k % 2)] (low nibble for k < 2), high 2
// bits at shift 2k of qh[32n + l], scale scales[8n + l / 16 + 2k].
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let n = e / 128u;
    let k = (e % 128u) / 32u;
    let l = e % 32u;
    let ql = q_nibbles4(q_u32(block_byte + 64u * n + l + 32u * (k % 2u)), k >= 2u);
    let qh = (q_bytes4(q_u32(block_byte + 128u + 32u * n + l)) >> vec4<u32>(2u * k)) & vec4<u32>(3u);
    let q = vec4<i32>(ql | (qh << vec4<u32>(4u))) - vec4<i32>(32);
    let sc = bitcast<i32>(q_byte(block_byte + 192u + 8u * n + l / 16u + 2u * k) << 24u) >> 24u;
    return (q_f16(block_byte + 208u) * f32(sc)) * vec4<f32>(q);
}
#endif

// ---- ternary formats ----

#ifdef QT_TQ1_0
const QK: u32 = 256u;
const QBYTES: u32 = 54u;
// qs[48] at 0, qh[4] at 48, d at 52. Five trits per qs byte, four per qh byte, trit n of
// byte q is ((q * 3^n) mod 256) * 3 >> 8. Elements: 5 x 32 from qs[0..32], 5 x 16 from
// qs[32..48], 4 x 4 from qh.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    var n: u32;
    var byte: u32;
    if (e < 160u) {
        n = e / 32u;
        byte = e % 32u;
    } else if (e < 240u) {
        n = (e - 160u) / 16u;
        byte = 32u + (e - 160u) % 16u;
    } else {
        n = (e - 240u) / 4u;
        byte = 48u;
    }
    var p = 1u;
    for (var i = 0u; i < n; i = i + 1u) {
        p = p * 3u;
    }
    let q = (q_bytes4(q_u32(block_byte + byte)) * vec4<u32>(p)) & vec4<u32>(0xffu);
    let xi = vec4<i32>((q * vec4<u32>(3u)) >> vec4<u32>(8u));
    return vec4<f32>(xi - vec4<i32>(1)) * q_f16(block_byte + 52u);
}
#endif

#ifdef QT_TQ2_0
const QK: u32 = 256u;
const QBYTES: u32 = 66u;
// qs[64] at 0, d at 64: per 128 elements, 32 bytes holding 4 x 32 two-bit values.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let shift = 2u * ((e % 128u) / 32u);
    let q = (q_bytes4(q_u32(block_byte + 32u * (e / 128u) + e % 32u)) >> vec4<u32>(shift)) & vec4<u32>(3u);
    return vec4<f32>(vec4<i32>(q) - vec4<i32>(1)) * q_f16(block_byte + 64u);
}
#endif

// ---- I-quants: grids and signs from iq_grids.wgsl (a storage buffer) ----
// In all of them element e sits in sub-block ib = e / 32, group l = (e % 32) / 8 of eight,
// and half h = (e % 8) / 4 of that group.

#ifdef QT_IQ2_XXS
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 66u;
// d at 0, then per sub-block 8 bytes: 4 grid indices, then a u32 with 4 x 7 sign bits and
// the 4-bit scale on top.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let aux = q_u32(block_byte + 2u + 8u * ib + 4u);
    let db = q_f16(block_byte) * (0.5 + f32(aux >> 28u)) * 0.25;
    let g = q_byte(block_byte + 2u + 8u * ib + l);
    let grid = vec4<f32>(q_bytes4(iq_grid(IQ2XXS_GRID_AT, 2u * g + h)));
    return db * grid * q_signs4(iq_grid(KSIGNS_IQ2XS_AT, (aux >> (7u * l)) & 127u), 4u * h);
}
#endif

#ifdef QT_IQ2_XS
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 74u;
// d at 0, qs[32] (u16: 9-bit grid index, 7 sign bits) at 2, scales[8] at 66 (two 4-bit
// scales per sub-block: groups 0-1 and 2-3).
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let q = q_u16(block_byte + 2u + 2u * (4u * ib + l));
    let sc = (q_byte(block_byte + 66u + ib) >> (4u * (l / 2u))) & 0xfu;
    let db = q_f16(block_byte) * (0.5 + f32(sc)) * 0.25;
    let grid = vec4<f32>(q_bytes4(iq_grid(IQ2XS_GRID_AT, 2u * (q & 511u) + h)));
    return db * grid * q_signs4(iq_grid(KSIGNS_IQ2XS_AT, q >> 9u), 4u * h);
}
#endif

#ifdef QT_IQ2_S
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 82u;
// d at 0, qs[32] (low 8 bits of the grid indices) at 2, signs[32] at 34, qh[8] (2 high index
// bits per group) at 66, scales[8] at 74.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let qh = q_byte(block_byte + 66u + ib);
    let g = q_byte(block_byte + 2u + 4u * ib + l) | ((qh << (8u - 2u * l)) & 0x300u);
    let sc = (q_byte(block_byte + 74u + ib) >> (4u * (l / 2u))) & 0xfu;
    let db = q_f16(block_byte) * (0.5 + f32(sc)) * 0.25;
    let grid = vec4<f32>(q_bytes4(iq_grid(IQ2S_GRID_AT, 2u * g + h)));
    return db * grid * q_signs4(q_byte(block_byte + 34u + 4u * ib + l), 4u * h);
}
#endif

#ifdef QT_IQ3_XXS
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 98u;
// d at 0, qs[64] (grid indices, 2 per group of 8) at 2, per sub-block a u32 at 66 + 4 ib
// with 4 x 7 sign bits and the 4-bit scale on top.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let aux = q_u32(block_byte + 66u + 4u * ib);
    let db = q_f16(block_byte) * (0.5 + f32(aux >> 28u)) * 0.5;
    let g = q_byte(block_byte + 2u + 8u * ib + 2u * l + h);
    let grid = vec4<f32>(q_bytes4(iq_grid(IQ3XXS_GRID_AT, g)));
    return db * grid * q_signs4(iq_grid(KSIGNS_IQ2XS_AT, (aux >> (7u * l)) & 127u), 4u * h);
}
#endif

#ifdef QT_IQ3_S
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 110u;
// d at 0, qs[64] at 2, qh[8] (ninth index bit) at 66, signs[32] at 74, scales[4] at 106
// (4 bits per sub-block).
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let sc = (q_byte(block_byte + 106u + ib / 2u) >> (4u * (ib % 2u))) & 0xfu;
    let db = q_f16(block_byte) * f32(1u + 2u * sc);
    let qh = q_byte(block_byte + 66u + ib);
    let g = q_byte(block_byte + 2u + 8u * ib + 2u * l + h) | ((qh << (8u - 2u * l - h)) & 256u);
    let grid = vec4<f32>(q_bytes4(iq_grid(IQ3S_GRID_AT, g)));
    return db * grid * q_signs4(q_byte(block_byte + 74u + 4u * ib + l), 4u * h);
}
#endif

#ifdef QT_IQ1_S
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 50u;
// d at 0, qs[32] (low 8 index bits) at 2, qh[8] (u16: 4 x 3 high index bits, a 3-bit scale
// and the sign of the delta) at 34.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let qh = q_u16(block_byte + 34u + 2u * ib);
    let dl = q_f16(block_byte) * f32(2u * ((qh >> 12u) & 7u) + 1u);
    let delta = select(0.125, -0.125, (qh & 0x8000u) != 0u);
    let g = q_byte(block_byte + 2u + 4u * ib + l) | (((qh >> (3u * l)) & 7u) << 8u);
    let grid = vec4<f32>(q_sbytes4(iq_grid(IQ1S_GRID_AT, 2u * g + h)));
    return dl * (grid + delta);
}
#endif

#ifdef QT_IQ1_M
#include "iq_grids"
const QK: u32 = 256u;
const QBYTES: u32 = 56u;
// qs[32] at 0, qh[16] at 32 (per group: 3 high index bits and the delta's sign in a
// nibble), scales[8] at 48: four u16 holding 3-bit scales for each half sub-block and,
// in their top nibbles, the f16 super-block scale.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let l = (e % 32u) / 8u;
    let h = (e % 8u) / 4u;
    let sb = block_byte + 48u;
    let scale = (q_u16(sb) >> 12u) | ((q_u16(sb + 2u) >> 8u) & 0xf0u) | ((q_u16(sb + 4u) >> 4u) & 0xf00u)
        | (q_u16(sb + 6u) & 0xf000u);
    let sc = q_u16(sb + 2u * (ib / 2u));
    let dl = half_to_f32(scale, 0u) * f32(2u * ((sc >> (6u * (ib % 2u) + 3u * (l / 2u))) & 7u) + 1u);
    let qh = q_byte(block_byte + 32u + 2u * ib + l / 2u);
    let g = q_byte(block_byte + 4u * ib + l) | ((qh << (8u - 4u * (l % 2u))) & 0x700u);
    let delta = select(0.125, -0.125, (qh & (0x08u << (4u * (l % 2u)))) != 0u);
    let grid = vec4<f32>(q_sbytes4(iq_grid(IQ1S_GRID_AT, 2u * g + h)));
    return dl * (grid + delta);
}
#endif

#ifdef QT_IQ4_NL
#include "iq_tables"
const QK: u32 = 32u;
const QBYTES: u32 = 18u;
// Q4_0's layout, the nibbles indexing kvalues_iq4nl.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let d = q_f16(block_byte);
    let n = q_nibbles4(q_u32(block_byte + 2u + 4u * (j % 4u)), j >= 4u);
    return d * vec4<f32>(KVALUES_IQ4NL[n.x], KVALUES_IQ4NL[n.y], KVALUES_IQ4NL[n.z], KVALUES_IQ4NL[n.w]);
}
#endif

#ifdef QT_IQ4_XS
#include "iq_tables"
const QK: u32 = 256u;
const QBYTES: u32 = 136u;
// d at 0, scales_h (u16: 2 high bits per sub-block) at 2, scales_l[4] (4 low bits per
// sub-block) at 4, qs[128] at 8: per sub-block 16 bytes in Q4_0's nibble layout.
fn dq4(block_byte: u32, j: u32) -> vec4<f32> {
    let e = 4u * j;
    let ib = e / 32u;
    let r = e % 32u;
    let ls = ((q_byte(block_byte + 4u + ib / 2u) >> (4u * (ib % 2u))) & 0xfu)
        | (((q_u16(block_byte + 2u) >> (2u * ib)) & 3u) << 4u);
    let dl = q_f16(block_byte) * f32(i32(ls) - 32);
    let n = q_nibbles4(q_u32(block_byte + 8u + 16u * ib + r % 16u), r >= 16u);
    return dl * vec4<f32>(KVALUES_IQ4NL[n.x], KVALUES_IQ4NL[n.y], KVALUES_IQ4NL[n.z], KVALUES_IQ4NL[n.w]);
}
#endif
