//! Every SIMD table against the scalar oracle, each ISA this CPU runs forced in turn: random
//! rows of odd lengths (vector tails), every row count, every f16 bit pattern, NaNs,
//! infinities and subnormals.

use super::{scalar, Elem, Isa, Kernels};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1).
    fn f32(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

fn simd_tables() -> Vec<&'static Kernels> {
    let mut tables: Vec<&'static Kernels> =
        Isa::available_all().into_iter().filter(|&i| i != Isa::Scalar).filter_map(Kernels::for_isa).collect();
    tables.dedup_by_key(|t| t.isa);
    tables
}

const LENGTHS: &[usize] = &[0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 255, 257, 1000, 4099];

/// Rows of `elem` made from f32 values (rounded to the type), `stride` bytes apart.
fn rows_of(elem: Elem, vals: &[f32], n: usize, stride: usize) -> Vec<u8> {
    let mut out = vec![0u8; stride * (vals.len() / n.max(1)).max(1) + 64];
    for (r, row) in vals.chunks(n.max(1)).enumerate() {
        // SAFETY: row r fits at r * stride (stride >= n elements).
        unsafe { scalar::KERNELS.f32_to(elem, row.as_ptr(), out.as_mut_ptr().add(r * stride), row.len()) };
    }
    out
}

#[test]
fn isa_list_starts_with_scalar_and_has_the_best_last() {
    let avail = Isa::available_all();
    assert_eq!(avail[0], Isa::Scalar);
    assert!(Kernels::for_isa(*avail.last().unwrap()).is_some());
    #[cfg(target_arch = "aarch64")]
    assert!(avail.contains(&Isa::Neon));
}

#[test]
fn dots_match_the_scalar_oracle() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    for t in simd_tables() {
        for elem in [Elem::F32, Elem::F16, Elem::BF16] {
            for &k in LENGTHS {
                for rows in 1..=4 {
                    // Rows padded by an odd number of elements, so row starts are unaligned.
                    let stride = (k + 3) * elem.size();
                    let av: Vec<f32> = (0..rows * k).map(|_| g.f32()).collect();
                    let bv: Vec<f32> = (0..k).map(|_| g.f32()).collect();
                    let a = rows_of(elem, &av, k, stride);
                    let b = rows_of(elem, &bv, k, k * elem.size());
                    let (mut got, mut want) = ([f32::NAN; 4], [f32::NAN; 4]);
                    // SAFETY: a holds `rows` rows of k elements `stride` apart, b one row.
                    unsafe {
                        (t.dot(elem))(k, a.as_ptr(), stride, rows, b.as_ptr(), got.as_mut_ptr());
                        (scalar::KERNELS.dot(elem))(k, a.as_ptr(), stride, rows, b.as_ptr(), want.as_mut_ptr());
                    }
                    for r in 0..rows {
                        // The sums differ in order only: bound by k ulps of the magnitude.
                        let tol = 1e-6 * (k as f32 + 1.0);
                        assert!(
                            (got[r] - want[r]).abs() <= tol,
                            "{:?} {elem:?} k={k} rows={rows} row {r}: {} vs oracle {}",
                            t.isa,
                            got[r],
                            want[r]
                        );
                    }
                    assert!(got[rows..].iter().all(|v| v.is_nan()), "{:?} wrote past `rows`", t.isa);
                }
            }
        }
    }
}

#[test]
fn widening_is_bit_exact_for_every_16_bit_pattern() {
    let all: Vec<u16> = (0..=u16::MAX).collect();
    for t in simd_tables() {
        for (name, simd, oracle) in
            [("f16", t.f16_to_f32, scalar::KERNELS.f16_to_f32), ("bf16", t.bf16_to_f32, scalar::KERNELS.bf16_to_f32)]
        {
            for &n in LENGTHS.iter().chain([all.len()].iter()) {
                let n = n.min(all.len());
                let (mut got, mut want) = (vec![0f32; n + 1], vec![0f32; n + 1]);
                // SAFETY: n elements in and out.
                unsafe {
                    simd(all.as_ptr(), got.as_mut_ptr(), n);
                    oracle(all.as_ptr(), want.as_mut_ptr(), n);
                }
                for i in 0..=n {
                    assert_eq!(
                        got[i].to_bits(),
                        want[i].to_bits(),
                        "{:?} {name} {:#06x} (n={n})",
                        t.isa,
                        all[i.min(n)]
                    );
                }
            }
        }
    }
}

#[test]
fn narrowing_rounds_like_the_oracle() {
    let mut g = Gen(7);
    // Random bit patterns (every class of f32), plus ties, subnormals, overflow, NaNs.
    let mut src: Vec<f32> = (0..20_000).map(|_| f32::from_bits(g.next() as u32)).collect();
    src.extend((0..20_000).map(|_| g.f32() * 70_000.0));
    src.extend([1.0 + f32::powi(2.0, -11), 65520.0, 1e-8, -6e-8, f32::INFINITY, f32::NAN, -0.0, 3.0e38]);
    src.extend([f32::from_bits(0x7f80_0001), f32::from_bits(0xffc0_1234), f32::from_bits(0x3f80_8000)]);
    for t in simd_tables() {
        for (name, simd, oracle) in
            [("f16", t.f32_to_f16, scalar::KERNELS.f32_to_f16), ("bf16", t.f32_to_bf16, scalar::KERNELS.f32_to_bf16)]
        {
            for &n in LENGTHS.iter().chain([src.len()].iter()) {
                let n = n.min(src.len());
                let (mut got, mut want) = (vec![0u16; n + 1], vec![0u16; n + 1]);
                // SAFETY: n elements in and out.
                unsafe {
                    simd(src.as_ptr(), got.as_mut_ptr(), n);
                    oracle(src.as_ptr(), want.as_mut_ptr(), n);
                }
                for i in 0..=n {
                    assert_eq!(got[i], want[i], "{:?} {name} of {:e} (n={n})", t.isa, src[i.min(n)]);
                }
            }
        }
    }
}

#[test]
fn elementwise_ops_are_bit_exact_in_place_too() {
    let mut g = Gen(11);
    for t in simd_tables() {
        for &n in LENGTHS {
            let x: Vec<f32> = (0..n).map(|_| g.f32() * 10.0).collect();
            let y: Vec<f32> = (0..n).map(|_| g.f32()).collect();
            for (name, simd, oracle) in [
                ("add", t.add, scalar::KERNELS.add),
                ("sub", t.sub, scalar::KERNELS.sub),
                ("mul", t.mul, scalar::KERNELS.mul),
                ("div", t.div, scalar::KERNELS.div),
            ] {
                let mut want = vec![0f32; n];
                let mut inplace = x.clone();
                // SAFETY: n elements each; in place: out aliases x, which the kernels allow.
                unsafe {
                    oracle(x.as_ptr(), y.as_ptr(), want.as_mut_ptr(), n);
                    simd(inplace.as_ptr(), y.as_ptr(), inplace.as_mut_ptr(), n);
                }
                let same = inplace.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{:?} {name} n={n}", t.isa);
            }
            let (mut got, mut want) = (vec![0f32; n], vec![0f32; n]);
            // SAFETY: n elements each.
            let (sg, sw) = unsafe {
                (t.scale)(x.as_ptr(), 0.37, got.as_mut_ptr(), n);
                (scalar::KERNELS.scale)(x.as_ptr(), 0.37, want.as_mut_ptr(), n);
                ((t.sum_sq_f64)(x.as_ptr(), n), (scalar::KERNELS.sum_sq_f64)(x.as_ptr(), n))
            };
            assert_eq!(got, want, "{:?} scale n={n}", t.isa);
            let (mut got, mut want) = (y.clone(), y.clone());
            // SAFETY: n elements each.
            unsafe {
                (t.mad)(got.as_mut_ptr(), x.as_ptr(), -0.37, n);
                (scalar::KERNELS.mad)(want.as_mut_ptr(), x.as_ptr(), -0.37, n);
            }
            let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{:?} mad n={n}", t.isa);
            assert!((sg - sw).abs() <= 1e-12 * sw.abs(), "{:?} sum_sq n={n}: {sg} vs {sw}", t.isa);
        }
    }
}

#[test]
fn exp_sums_match_the_oracle() {
    let mut g = Gen(13);
    for t in simd_tables() {
        for &n in LENGTHS {
            // Softmax inputs: at most the max, down past where exp underflows, and -inf (masked).
            let mut x: Vec<f32> = (0..n).map(|_| (g.f32() - 1.0) * 60.0).collect();
            if n > 3 {
                x[1] = f32::NEG_INFINITY;
                x[2] = -104.0;
                x[3] = 0.0;
            }
            let (mut got, mut want) = (vec![0f32; n], vec![0f32; n]);
            // SAFETY: n elements each.
            let (sg, sw) = unsafe {
                (
                    (t.exp_sum)(x.as_ptr(), 0.5, got.as_mut_ptr(), n),
                    (scalar::KERNELS.exp_sum)(x.as_ptr(), 0.5, want.as_mut_ptr(), n),
                )
            };
            for i in 0..n {
                let tol = 3.0 * f32::EPSILON * want[i] + f32::from_bits(1);
                assert!((got[i] - want[i]).abs() <= tol, "{:?} exp({}) = {} vs {}", t.isa, x[i] - 0.5, got[i], want[i]);
            }
            assert!((sg - sw).abs() <= 1e-6 * sw, "{:?} sum n={n}: {sg} vs {sw}", t.isa);
        }
    }
}
