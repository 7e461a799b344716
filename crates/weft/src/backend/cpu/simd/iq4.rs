//! Dot products of the non-linear 4-bit formats: iq4_nl (32-element blocks, q8_0
//! activations) and iq4_xs (super-blocks with 6-bit scales, q8_K), as ggml's AVX2 kernels
//! compute them: each nibble looks its level up in a 16-entry table (`shuffle_i8`), levels
//! times activations with the sign trick (bit-identical floats).

use super::iq2::q8;
use super::ops::{arr, bytes_of, Simd};
use super::prefetch;
use crate::types::quant::grids::KVALUES_IQ4NL;
use crate::types::quant::{BlockIq4Nl, BlockIq4Xs, BlockQ8K, BlockQ8_0};

/// iq4_nl: two blocks per step into two accumulators, an odd last block in scalar code
/// (ggml's loop shape).
#[inline(always)]
pub(crate) fn iq4_nl<S: Simd>(s: S, x: &[BlockIq4Nl], y: &[BlockQ8_0]) -> f32 {
    let values = s.load_dup(bytes_of(&KVALUES_IQ4NL));
    let (mut acc1, mut acc2) = (s.fzero(), s.fzero());
    let pairs = x.len() / 2;
    for i in 0..pairs {
        let (x0, x1, y0, y1) = (&x[2 * i], &x[2 * i + 1], &y[2 * i], &y[2 * i + 1]);
        // 36 bytes a step: one request each covers every line.
        prefetch::block(s, x0);
        let p1 = s.dot4_signed(s.shuffle_i8(values, s.nibbles(&x0.qs)), s.load(bytes_of(&y0.qs)));
        let p2 = s.dot4_signed(s.shuffle_i8(values, s.nibbles(&x1.qs)), s.load(bytes_of(&y1.qs)));
        acc1 = s.fmadd(s.fsplat(s.f16(y0.d.bits()) * s.f16(x0.d.bits())), s.cvt_i32(p1), acc1);
        acc2 = s.fmadd(s.fsplat(s.f16(y1.d.bits()) * s.f16(x1.d.bits())), s.cvt_i32(p2), acc2);
    }
    let sumf = s.hsum(s.fadd(acc1, acc2));
    match x.len() % 2 {
        1 => sumf + iq4_nl_tail(s, &x[2 * pairs], &y[2 * pairs]),
        _ => sumf,
    }
}

/// ggml's scalar form of an odd last iq4_nl block.
#[inline(always)]
fn iq4_nl_tail<S: Simd>(s: S, bx: &BlockIq4Nl, by: &BlockQ8_0) -> f32 {
    let d = s.f16(by.d.bits()) * s.f16(bx.d.bits());
    let (mut sumi1, mut sumi2) = (0i32, 0i32);
    for j in 0..16 {
        sumi1 += by.qs[j] as i32 * KVALUES_IQ4NL[(bx.qs[j] & 0xf) as usize] as i32;
        sumi2 += by.qs[j + 16] as i32 * KVALUES_IQ4NL[(bx.qs[j] >> 4) as usize] as i32;
    }
    d * (sumi1 + sumi2) as f32
}

/// The iq4_nl levels plus 128, as unsigned bytes.
static KVALUES_IQ4NL_U8: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = (KVALUES_IQ4NL[i] as i16 + 128) as u8;
        i += 1;
    }
    t
};

/// [`iq4_nl`] over `R` rows a pass, each row with ggml's two accumulators (even and odd
/// blocks) and scalar tail. Where `dot4` takes any unsigned byte exactly (VNNI), a row's
/// levels come from the table plus 128 and its dot starts from the block's shared
/// -128 * y: two ops a row and block where the sign trick takes four, the same exact lanes
/// except where y holds -128 (callers check, [`super::RowDot::pairs_ok`]). Elsewhere the
/// rows keep ggml's sign trick.
#[inline(always)]
pub(crate) fn iq4_nl_rows<S: Simd, const R: usize>(s: S, x: [&[BlockIq4Nl]; R], y: &[BlockQ8_0]) -> [f32; R] {
    let n = y.len();
    let x = x.map(|r| &r[..n]);
    let values = s.load_dup(if S::VNNI { &KVALUES_IQ4NL_U8 } else { bytes_of(&KVALUES_IQ4NL) });
    let k128 = s.splat_i8(i8::MIN);
    let mut acc = [[s.fzero(); 2]; R];
    let pairs = n / 2;
    for p in 0..pairs {
        for (h, by) in y[2 * p..2 * p + 2].iter().enumerate() {
            let (qy, dy) = (s.load(bytes_of(&by.qs)), s.fsplat(s.f16(by.d.bits())));
            let neg_corr = if S::VNNI { s.sub_i32(s.zero(), s.dot4(k128, qy)) } else { s.zero() };
            for r in 0..R {
                let bx = &x[r][2 * p + h];
                prefetch::row_block::<S, _, R>(s, x[r], 2 * p + h);
                let levels = s.shuffle_i8(values, s.nibbles(&bx.qs));
                let sum = if S::VNNI { s.dot4_acc(neg_corr, levels, qy) } else { s.dot4_signed(levels, qy) };
                let d = s.fmul(dy, s.fsplat(s.f16(bx.d.bits())));
                acc[r][h] = s.fmadd(d, s.cvt_i32(sum), acc[r][h]);
            }
        }
    }
    let mut out = [0f32; R];
    for r in 0..R {
        out[r] = s.hsum(s.fadd(acc[r][0], acc[r][1]));
        if n % 2 == 1 {
            out[r] += iq4_nl_tail(s, &x[r][n - 1], &y[n - 1]);
        }
    }
    out
}

#[inline(always)]
pub(crate) fn iq4_xs<S: Simd>(s: S, x: &[BlockIq4Xs], y: &[BlockQ8K]) -> f32 {
    let values = s.load_dup(bytes_of(&KVALUES_IQ4NL));
    let mut accum = s.fzero();
    for (bx, by) in prefetch::ahead(s, x).zip(y) {
        let mut sh = bx.scales_h.get();
        let (mut sumi1, mut sumi2) = (s.zero(), s.zero());
        for pair in 0..4 {
            let sl = bx.scales_l[pair];
            let ls1 = ((sl & 0xf) as i16 | ((sh << 4) & 0x30) as i16) - 32;
            let ls2 = ((sl >> 4) as i16 | ((sh << 2) & 0x30) as i16) - 32;
            sh >>= 4;
            for (g, (ls, sumi)) in [(ls1, &mut sumi1), (ls2, &mut sumi2)].into_iter().enumerate() {
                let ib = 2 * pair + g;
                let q4b = s.shuffle_i8(values, s.nibbles(arr(&bx.qs, 16 * ib)));
                let p16 = s.maddubs_signed(q4b, q8(s, by, ib));
                *sumi = s.add_i32(s.madd_i16(p16, s.splat_i16(ls)), *sumi);
            }
        }
        let d = s.f16(bx.d.bits()) * by.d.get();
        accum = s.fmadd(s.fsplat(d), s.cvt_i32(s.add_i32(sumi1, sumi2)), accum);
    }
    s.hsum(accum)
}
