//! Every vector kernel against its scalar oracle, on every ISA this machine runs (x86: the
//! AVX2 and AVX-512 builds are both forced here; aarch64 under qemu: NEON with and without
//! `dotprod`): random blocks as the quantizers write them and as raw random bytes, row
//! lengths of 1 to 9 blocks (odd counts reach the kernels' tails).

use super::*;
use crate::types::quant::block::{Half, LeF32};
use crate::types::quant::{BlockQ8K, BlockQ8_1, LevelSign};
use crate::types::QK_K;

/// Every type with a vector dot product.
const TYPES: [Type; 19] = [
    Type::Q4_0,
    Type::Q4_1,
    Type::Q5_0,
    Type::Q5_1,
    Type::Q8_0,
    Type::Q2_K,
    Type::Q3_K,
    Type::Q4_K,
    Type::Q5_K,
    Type::Q6_K,
    Type::IQ2_XXS,
    Type::IQ2_XS,
    Type::IQ2_S,
    Type::IQ3_XXS,
    Type::IQ3_S,
    Type::IQ1_S,
    Type::IQ1_M,
    Type::IQ4_NL,
    Type::IQ4_XS,
];

/// xorshift64*: reproducible test data without a dependency.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1).
    pub(super) fn f32(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    pub(super) fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32() * 3.0).collect()
    }
    pub(super) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// `n` elements of `ty` quantized from random floats (with unit importance weights where
/// the type needs them).
pub(super) fn quantized_row(ty: Type, n: usize, rng: &mut Rng) -> Vec<u8> {
    let x = rng.floats(n);
    let mut out = vec![0u8; ty.row_size(n)];
    let weights = vec![1.0f32; n];
    let imatrix = quant::requires_imatrix(ty).then_some(&weights[..]);
    quant::quantize_chunk(ty, &x, &mut out, 1, n, imatrix).unwrap();
    out
}

/// `n` elements of `ty` as random bytes, each block redrawn until its scales are finite.
pub(super) fn random_row(ty: Type, n: usize, rng: &mut Rng) -> Vec<u8> {
    let size = ty.type_size();
    let mut out = Vec::with_capacity(ty.row_size(n));
    for _ in 0..n / ty.blck_size() {
        loop {
            let mut block = rng.bytes(size);
            if ty == Type::Q8_0 {
                // ggml's quantizers never write -128; AVX2's sign trick wraps on it.
                block[2..].iter_mut().filter(|b| **b == 0x80).for_each(|b| *b = 0x81);
            }
            let mut deq = vec![0f32; ty.blck_size()];
            quant::dequantize_row(ty, &block, &mut deq).unwrap();
            if quant::validate_row_data(ty, &block).is_ok() && deq.iter().all(|v| v.is_finite() && v.abs() < 1e6) {
                out.extend_from_slice(&block);
                break;
            }
        }
    }
    out
}

/// An activation row for `ty` from random floats; with `raw`, its levels are then replaced
/// by random bytes in -127..=127 and the sums recomputed.
pub(super) fn activation_row(ty: Type, n: usize, raw: bool, rng: &mut Rng) -> Vec<u8> {
    let dot_ty = quant::vec_dot_type(ty);
    let mut y = vec![0u8; dot_ty.row_size(n)];
    quant::quantize_row_for_dot(dot_ty, &rng.floats(n), &mut y).unwrap();
    if !raw {
        return y;
    }
    let level = |rng: &mut Rng| ((rng.next() % 255) as i32 - 127) as i8;
    match dot_ty {
        Type::Q8_0 => {
            for b in y.chunks_exact_mut(34) {
                b[2..].iter_mut().for_each(|q| *q = level(rng) as u8);
            }
        }
        Type::Q8_1 => {
            for b in bytemuck::cast_slice_mut::<u8, BlockQ8_1>(&mut y) {
                b.qs.iter_mut().for_each(|q| *q = level(rng));
                let sum: i32 = b.qs.iter().map(|&q| q as i32).sum();
                b.s = Half::from_f32(b.d.to_f32() * sum as f32);
            }
        }
        Type::Q8_K => {
            for b in bytemuck::cast_slice_mut::<u8, BlockQ8K>(&mut y) {
                b.qs.iter_mut().for_each(|q| *q = level(rng));
                b.set_bsums();
                if b.d.get() == 0.0 {
                    b.d = LeF32::new(0.01);
                }
            }
        }
        _ => unreachable!("activation formats"),
    }
    y
}

/// sum |x_i * y_i| over the dequantized rows: the scale of rounding differences.
pub(super) fn magnitude(ty: Type, x: &[u8], y: &[u8], n: usize) -> f64 {
    let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
    quant::dequantize_row(ty, x, &mut a).unwrap();
    quant::dequantize_row(quant::vec_dot_type(ty), y, &mut b).unwrap();
    a.iter().zip(&b).map(|(&p, &q)| (p as f64 * q as f64).abs()).sum()
}

#[test]
fn every_vector_dot_matches_its_scalar_oracle_on_every_isa() {
    let isas = Isa::available_all();
    eprintln!("ISAs tested: {:?}", isas);
    let mut rng = Rng::new(7);
    for ty in TYPES {
        let blocks: &[usize] = if ty.blck_size() == QK_K { &[1, 2, 3, 5] } else { &[1, 2, 3, 7, 9, 64] };
        for &nb in blocks {
            let n = nb * ty.blck_size();
            for (raw_x, raw_y) in [(false, false), (true, false), (true, true), (false, true)] {
                let x = if raw_x { random_row(ty, n, &mut rng) } else { quantized_row(ty, n, &mut rng) };
                let y = activation_row(ty, n, raw_y, &mut rng);
                let want = RowDot::new(ty, Isa::Scalar).unwrap().dot(&x, &y);
                let tol = 2e-6 * magnitude(ty, &x, &y, n) + 1e-30;
                let mut x86: Option<f32> = None;
                for &isa in &isas {
                    let k = RowDot::new(ty, isa).unwrap();
                    assert_eq!(k.is_simd(), isa != Isa::Scalar, "{ty} on {isa:?}");
                    let got = k.dot(&x, &y);
                    assert!(
                        ((got - want) as f64).abs() <= tol,
                        "{ty} {isa:?} {nb} blocks raw=({raw_x},{raw_y}): {got} vs scalar {want} (tol {tol})"
                    );
                    // All vector builds of one architecture run the same operations.
                    if isa != Isa::Scalar {
                        let first = *x86.get_or_insert(got);
                        assert_eq!(got.to_bits(), first.to_bits(), "{ty} {isa:?} differs from another vector ISA");
                    }
                    // The table's own kernel too where a native one replaces it on this CPU.
                    // SAFETY: the ISA is available; x and y are whole blocks, as many of each.
                    if let Some(f) = super::table::native(ty, isa).and((super::table::dot_entry(ty).unwrap().simd)(isa))
                    {
                        let table = unsafe { f(&x, &y) };
                        assert_eq!(
                            table.to_bits(),
                            got.to_bits(),
                            "{ty} {isa:?}: the table's kernel differs from the native one"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn vector_from_float_writes_the_scalar_bytes() {
    let mut rng = Rng::new(11);
    for ty in [Type::Q8_0, Type::Q8_1, Type::Q8_K] {
        for nb in [1, 2, 5] {
            let n = nb * ty.blck_size();
            let mut inputs = vec![rng.floats(n), vec![0.0; n], (0..n).map(|i| i as f32 - 7.5).collect::<Vec<f32>>()];
            // Exact halves after scaling, and non-finite values (scalar fallback).
            let mut special = rng.floats(n);
            special[3] = f32::NAN;
            special[n - 1] = f32::INFINITY;
            inputs.push(special);
            let mut ties = vec![0.5f32; n];
            ties[0] = 127.0;
            inputs.push(ties);
            for x in inputs {
                let mut want = vec![0u8; ty.row_size(n)];
                quant::quantize_row_for_dot(ty, &x, &mut want).unwrap();
                for isa in Isa::available_all() {
                    let mut got = vec![0u8; ty.row_size(n)];
                    from_float(ty, isa, &x, &mut got).unwrap();
                    assert_eq!(got, want, "{ty} on {isa:?}");
                }
            }
        }
    }
}

#[test]
fn from_float_refuses_mismatched_lengths() {
    for isa in Isa::available_all() {
        let mut y = vec![0u8; 33];
        assert!(from_float(Type::Q8_0, isa, &[0.0; 32], &mut y).is_err());
        assert!(from_float(Type::Q8_K, isa, &[0.0; 100], &mut [0u8; 10]).is_err());
    }
}

#[test]
fn the_f16_table_is_the_exact_conversion() {
    for bits in 0..=u16::MAX {
        let (got, want) = (ops::half_to_f32(bits), crate::types::f16_to_f32(bits));
        assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()), "{bits:#06x}: {got} vs {want}");
    }
}

#[test]
fn levels_rebuild_the_dequantized_values_in_their_range() {
    let mut rng = Rng::new(3);
    for ty in TYPES {
        let sign = quant::levels_sign(ty).expect("every perf-list type has levels");
        let n = 2 * ty.blck_size().max(256);
        for raw in [false, true] {
            let x = if raw { random_row(ty, n, &mut rng) } else { quantized_row(ty, n, &mut rng) };
            let mut want = vec![0f32; n];
            quant::dequantize_row(ty, &x, &mut want).unwrap();
            let (mut s, mut sa, mut ma) = (vec![0i8; n], vec![0f32; n / 16], vec![0f32; n / 16]);
            quant::row_levels(ty, &x, &mut s, &mut sa, &mut ma).unwrap();
            for (i, &w) in want.iter().enumerate() {
                let got = sa[i / 16] * s[i] as f32 + ma[i / 16];
                let scale = sa[i / 16].abs() * 128.0 + ma[i / 16].abs();
                assert!((got - w).abs() <= 1e-6 * scale, "{ty} raw={raw} [{i}]: {got} vs {w}");
                match sign {
                    LevelSign::Unsigned => assert!(s[i] >= 0, "{ty} [{i}]: level {} below 0", s[i]),
                    LevelSign::Signed => assert!(s[i] != -128, "{ty} [{i}]: level -128"),
                }
            }
        }
    }
}

/// `gemm` on `isa` over m x n outputs, against the scalar `vec_dot` of every pair.
fn check_gemm(ty: Type, isa: Isa, m: usize, n: usize, k: usize, rng: &mut Rng) {
    let Some(g) = gemm::QuantGemm::new(ty, isa) else {
        assert_eq!(isa, Isa::Scalar, "{ty}: no GEMM on {isa:?}");
        return;
    };
    let a: Vec<Vec<u8>> =
        (0..m).map(|i| if i % 3 == 0 { random_row(ty, k, rng) } else { quantized_row(ty, k, rng) }).collect();
    let b: Vec<Vec<u8>> = (0..n).map(|j| activation_row(ty, k, j % 2 == 1, rng)).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let cx = crate::backend::cpu::kernel::Cx::new(&pool);
    let fill = |c: usize, out: &mut [u8]| {
        out.copy_from_slice(&b[c]);
        Ok(())
    };
    let packed = gemm::PackedB::new(quant::vec_dot_type(ty), k, n, g.nr(), &fill, &cx).unwrap();
    let out = std::sync::Mutex::new(vec![f32::NAN; m * n]);
    let store = |j: usize, i0: usize, v: &[f32]| {
        let mut out = out.lock().unwrap();
        for (i, &x) in v.iter().enumerate() {
            out[(i0 + i) * n + j] = x;
        }
    };
    g.run(m, n, k, &|i| &a[i][..], &packed, &store, &cx).unwrap();
    let out = out.into_inner().unwrap();
    let scalar = RowDot::new(ty, Isa::Scalar).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want = scalar.dot(&a[i], &b[j]);
            let tol = 2e-6 * magnitude(ty, &a[i], &b[j], k) + 1e-30;
            let got = out[i * n + j];
            assert!(((got - want) as f64).abs() <= tol, "{ty} {isa:?} m={m} n={n} k={k} [{i},{j}]: {got} vs {want}");
        }
    }
}

#[test]
fn gemm_matches_the_scalar_dots_on_every_isa_with_tails() {
    let mut rng = Rng::new(5);
    for isa in Isa::available_all() {
        for ty in TYPES {
            // Row and column tails of every tile size; one group, a group tail (32-element
            // formats), and more groups than one k-slab.
            let ks: &[usize] = if ty.blck_size() == QK_K { &[256, 9 * 256] } else { &[32, 9 * 32, 41 * 32] };
            for &k in ks {
                check_gemm(ty, isa, 13, 11, k, &mut rng);
            }
        }
        // More rows than one task's block, fewer columns than the column tile.
        check_gemm(Type::Q4_K, isa, 150, 1, 256, &mut rng);
        check_gemm(Type::IQ4_NL, isa, 70, 3, 64, &mut rng);
    }
}

/// The two- and four-row kernels give each row's one-row result bit for bit, on every ISA,
/// for quantized and raw (any bytes) rows.
#[test]
fn several_row_dots_equal_one_row_dots_bit_for_bit() {
    let mut rng = Rng::new(11);
    let (mut with2, mut with4) = (0, 0);
    for ty in TYPES {
        for &isa in &Isa::available_all() {
            with2 += usize::from(super::table::dot2(ty, isa).is_some());
            with4 += usize::from(super::table::dot4(ty, isa).is_some());
            let k = RowDot::new(ty, isa).unwrap();
            for nb in [1, 3, 8] {
                let n = nb * ty.blck_size();
                for raw in [false, true] {
                    let row = |rng: &mut Rng| if raw { random_row(ty, n, rng) } else { quantized_row(ty, n, rng) };
                    let x: [Vec<u8>; 4] = std::array::from_fn(|_| row(&mut rng));
                    let y = activation_row(ty, n, raw, &mut rng);
                    let one = x.each_ref().map(|x| k.dot(x, &y).to_bits());
                    let [v0, v1] = k.dot2(&x[0], &x[1], &y);
                    assert_eq!([v0.to_bits(), v1.to_bits()], [one[0], one[1]], "{ty} {isa:?} {nb} blocks raw={raw}");
                    let v = k.dot4(x.each_ref().map(|x| x.as_slice()), &y).map(f32::to_bits);
                    assert_eq!(v, one, "four rows: {ty} {isa:?} {nb} blocks raw={raw}");
                    // The table's kernels also where `rows_pay` keeps them off this ISA.
                    // SAFETY: the ISA is available; the rows are whole blocks of y's length.
                    if let Some(f) = super::table::dot2(ty, isa) {
                        let v = unsafe { f([&x[0], &x[1]], &y) }.map(f32::to_bits);
                        assert_eq!(v, [one[0], one[1]], "table two rows: {ty} {isa:?} {nb} blocks raw={raw}");
                    }
                    if let Some(f) = super::table::dot4(ty, isa) {
                        let v = unsafe { f(x.each_ref().map(|x| x.as_slice()), &y) }.map(f32::to_bits);
                        assert_eq!(v, one, "table four rows: {ty} {isa:?} {nb} blocks raw={raw}");
                    }
                }
            }
        }
    }
    // A -128 level (a NaN quantized into q8_0) keeps q4_0, q5_0 and iq4_nl rows off the
    // several-row kernels.
    for ty in [Type::Q4_0, Type::Q5_0, Type::IQ4_NL] {
        let k = RowDot::best(ty).unwrap();
        let mut y = activation_row(ty, 64, false, &mut rng);
        assert!(k.pairs_ok(&y));
        y[34 + 2 + 5] = 0x80;
        assert!(!k.pairs_ok(&y));
    }
    let vector_isas = Isa::available_all().into_iter().filter(|&i| i != Isa::Scalar).count();
    assert!(vector_isas == 0 || (with2 > 0 && with4 > 0), "no two- or four-row kernel was tested");
}

/// An activation of -128 (ggml's q8_K quantizer never writes one, but a q8_K row handed in may
/// hold it) reads the same in every native kernel as in the table's kernel it replaces: the
/// masked negations wrap there as `vpsignb` does. (x86 only: no other architecture has native
/// kernels.)
#[cfg(target_arch = "x86_64")]
#[test]
fn native_kernels_read_minus_128_activations_as_the_table_does() {
    let mut rng = Rng::new(17);
    let mut checked = 0;
    for ty in TYPES {
        for &isa in &Isa::available_all() {
            let Some(native) = super::table::native(ty, isa) else { continue };
            let table = (super::table::dot_entry(ty).unwrap().simd)(isa).unwrap();
            assert_eq!(quant::vec_dot_type(ty), Type::Q8_K, "{ty}");
            let n = 3 * ty.blck_size();
            let x = quantized_row(ty, n, &mut rng);
            let mut y = activation_row(ty, n, true, &mut rng);
            for b in bytemuck::cast_slice_mut::<u8, BlockQ8K>(&mut y) {
                b.qs.iter_mut().step_by(5).for_each(|q| *q = i8::MIN);
                b.set_bsums();
            }
            // SAFETY: the ISA is available; x and y are whole blocks, as many of each.
            let (got, want) = unsafe { ((native.one)(&x, &y), table(&x, &y)) };
            assert_eq!(got.to_bits(), want.to_bits(), "{ty} {isa:?}: {got} vs the table's {want}");
            checked += 1;
        }
    }
    eprintln!("native kernels checked with -128 activations: {checked}");
    // Every x86 machine with AVX-512 VNNI and GFNI has some (q2_K, q3_K, iq4_xs), with VBMI
    // q4_K, q5_K, q6_K and iq2_xxs too, and where gathers are fast, the six gathering grid
    // I-quants.
    if super::gfni::available() {
        let want = if super::gfni::gather_available() {
            13
        } else if super::gfni::vbmi_available() {
            7
        } else {
            3
        };
        assert!(checked >= want, "{checked} < {want}");
    }
}
