//! Vector kernels of the quantized types: ggml's `vec_dot` of every quantized type of the
//! perf list against its activation format, the activation formats' `from_float`, and the
//! blocked GEMM that MUL_MAT uses for many columns. Each kernel is written once against the
//! [`ops::Simd`] operations and compiled per ISA (AVX2, AVX-512 with VNNI, NEON with and
//! without `dotprod`); [`Isa::best`], the CPU backend's one ISA choice, picks it at run time
//! (AVX-512 without VNNI runs the AVX2 kernels). Where one CPU's own instructions do much
//! better, a type also has a kernel written with them, which replaces the shared one there
//! (`table::native`: q2_K and q3_K with GFNI, q3_K in 512-bit registers, `gfni/`). The scalar forms in
//! `types::quant` stay the fallback and the tests' oracle (`table.rs` lists both per type).

pub use crate::backend::cpu::isa::Isa;
use crate::types::quant;
use crate::types::Type;
use crate::Result;

/// `for $i in 0..$n $body` written out for `$i` = 0, 1, 2, 3 (`$n` at most 4, known at compile
/// time), for the kernel loops LLVM kept as loops, their index-dependent shifts, table rows
/// and several rows' sums then in memory every block: q4_K's rows (four rows with the matrix
/// in the cache, 2 threads, best us: as a loop 9% slower than one row, 744 / 745 -> 814 /
/// 808; written out 4% faster, 767 -> 735) and q5_K's chunks (four rows from L1: 32.7 against
/// one row's 20.3 ticks as a loop).
macro_rules! unrolled {
    ($n:expr, |$i:ident| $body:block) => {{
        const { assert!($n <= 4) };
        {
            let $i = 0;
            if $i < $n $body
        }
        {
            let $i = 1;
            if $i < $n $body
        }
        {
            let $i = 2;
            if $i < $n $body
        }
        {
            let $i = 3;
            if $i < $n $body
        }
    }};
}

pub(crate) mod gemm;
#[cfg(target_arch = "x86_64")]
mod gemm_avx512;
mod gemm_kernel;
#[cfg(target_arch = "x86_64")]
mod gfni;
mod iq1;
mod iq2;
mod iq3;
mod iq4;
mod kquants;
mod legacy;
#[cfg(target_arch = "aarch64")]
mod neon;
pub(crate) mod ops;
mod prefetch;
mod q8;
mod table;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
mod tests;

/// The dot product of rows of one quantized type with rows of its vec_dot type, on one ISA.
#[derive(Clone, Copy)]
pub struct RowDot {
    ty: Type,
    scalar: fn(&[u8], &[u8]) -> f32,
    simd: Option<table::DotFn>,
    simd2: Option<table::DotRowsFn<2>>,
    simd4: Option<table::DotRowsFn<4>>,
}

impl RowDot {
    /// The kernel of `ty` on `isa`: its vector form where there is one, else its scalar
    /// form. `None` for types without a dot product (floats, repacked layouts) or an ISA
    /// this CPU does not run.
    pub fn new(ty: Type, isa: Isa) -> Option<RowDot> {
        let entry = table::dot_entry(ty).or_else(|| scalar_only(ty))?;
        if !isa.available() {
            return None;
        }
        let native = table::native(ty, isa);
        Some(RowDot {
            ty,
            scalar: entry.scalar,
            simd: native.map(|k| k.one).or_else(|| (entry.simd)(isa)),
            simd2: match native {
                Some(k) => k.two,
                None => table::dot2(ty, isa).filter(|_| rows_pay(ty, isa, 2)),
            },
            simd4: match native {
                Some(k) => k.four,
                None => table::dot4(ty, isa).filter(|_| rows_pay(ty, isa, 4)),
            },
        })
    }

    /// [`RowDot::new`] on [`Isa::best`].
    pub fn best(ty: Type) -> Option<RowDot> {
        RowDot::new(ty, Isa::best())
    }

    pub fn ty(&self) -> Type {
        self.ty
    }

    /// Whether a vector kernel (not the scalar form) runs.
    pub fn is_simd(&self) -> bool {
        self.simd.is_some()
    }

    /// Two rows of the type dotted with `y`, each result exactly `dot(x, y)`'s: one pass
    /// over both rows where the type has a two-row kernel (its fused adds overlap), two
    /// passes otherwise. `y` must pass [`RowDot::pairs_ok`].
    #[inline]
    pub fn dot2(&self, x0: &[u8], x1: &[u8], y: &[u8]) -> [f32; 2] {
        match self.simd2 {
            // SAFETY: picked for an ISA that `new` checked; the kernel slices each row to
            // y's block count, which panics on a short row as `dot` does.
            Some(f) if x0.len() == x1.len() => unsafe { f([x0, x1], y) },
            _ => [self.dot(x0, y), self.dot(x1, y)],
        }
    }

    /// [`RowDot::dot2`] for four rows: one pass where the type has a four-row kernel, two
    /// [`RowDot::dot2`] otherwise. `y` must pass [`RowDot::pairs_ok`].
    #[inline]
    pub fn dot4(&self, x: [&[u8]; 4], y: &[u8]) -> [f32; 4] {
        match self.simd4 {
            // SAFETY: as in `dot2`.
            Some(f) if x.iter().all(|r| r.len() == x[0].len()) => unsafe { f(x, y) },
            _ => {
                let ([a, b], [c, d]) = (self.dot2(x[0], x[1], y), self.dot2(x[2], x[3], y));
                [a, b, c, d]
            }
        }
    }

    /// Whether [`RowDot::dot2`] and [`RowDot::dot4`] give `dot`'s bits with activation row
    /// `y`: the several-row kernels of q4_0, q5_0 and (VNNI) iq4_nl drop the sign trick,
    /// which reads a -128 level (only a NaN input makes one) differently; every other type,
    /// any row.
    pub fn pairs_ok(&self, y: &[u8]) -> bool {
        !matches!(self.ty, Type::Q4_0 | Type::Q5_0 | Type::IQ4_NL)
            || bytemuck::cast_slice::<u8, quant::BlockQ8_0>(y).iter().all(|b| !b.qs.contains(&i8::MIN))
    }

    /// `x` (whole blocks of the type) dotted with `y` (as many blocks of its vec_dot type):
    /// callers size the rows with `Type::row_size`. A length that is not whole blocks panics
    /// (a caller bug, never data-dependent).
    #[inline]
    pub fn dot(&self, x: &[u8], y: &[u8]) -> f32 {
        match self.simd {
            // SAFETY: `simd` was picked for an ISA that `new` checked is available.
            Some(f) => unsafe { f(x, y) },
            None => (self.scalar)(x, y),
        }
    }
}

/// Whether `ty`'s `rows`-row kernel beats fewer rows a pass on `isa`. On AVX-512 with VNNI,
/// q8_0's one-row loop (a `vpdpbusd` and a fused add per block) ran faster alone: MUL_MAT
/// q8_0 4096 x 14336, n = 1, two builds alternating in one process on Zen 4, best 3107 ->
/// 2712 us and 2457 -> 2169 us with the order swapped (on Zen 2's AVX2 the two-row form
/// won, 1875-2073 -> 1607-1704 us). q4_0's two-row form measured even with one row there
/// and stays. On AVX2 q5_1's and iq4_nl's several-row kernels lose (16 vector registers:
/// q5_1 spreads each row's fifth bits to bytes with three constants, iq4_nl keeps two
/// accumulators a row and the sign trick): alternating calls, best us, one row against
/// several: q5_1 1648 / 1666 against 2263 / 2289, iq4_nl 1237 / 1264 against 1351 / 1363
/// (q5_0 gains there: 1601 / 1612 -> 1494 / 1482). q3_K's pair runs only with VNNI, where its
/// rows share work: on AVX2 (ggml's form a row) it was faster from L1 but slower in the
/// mat-vec, best us one row against two 1044 / 1021 against 1244 / 1244. (A type's native
/// kernels, `table::native`, bring their own row counts and skip this.)
fn rows_pay(ty: Type, isa: Isa, rows: usize) -> bool {
    match (ty, isa) {
        (Type::Q8_0, Isa::Avx512Vnni) => rows != 2,
        (Type::Q5_1 | Type::IQ4_NL, Isa::Avx2 | Isa::Avx512) => false,
        (Type::Q3_K, _) => isa == Isa::Avx512Vnni,
        _ => true,
    }
}

/// Types with a scalar dot product only (no vector kernel: not on the perf list).
fn scalar_only(ty: Type) -> Option<table::DotEntry> {
    fn none(_: Isa) -> Option<table::DotFn> {
        None
    }
    macro_rules! scalar {
        ($f:ty) => {
            Some(table::DotEntry {
                scalar: |x, y| <$f as quant::Format>::vec_dot(bytemuck::cast_slice(x), bytemuck::cast_slice(y)),
                simd: none,
            })
        };
    }
    match ty {
        Type::Q8_1 => scalar!(quant::legacy::Q8_1),
        Type::Q8_K => scalar!(quant::k::Q8K),
        Type::TQ1_0 => scalar!(quant::tq::Tq1_0),
        Type::TQ2_0 => scalar!(quant::tq::Tq2_0),
        _ => None,
    }
}

/// ggml's `from_float` of an activation format `ty` (q8_0, q8_1, q8_K; any other vec_dot
/// type goes to `quant::quantize_row_for_dot`) on `isa`, bytes identical to the scalar
/// form. Lengths are checked as `quant::quantize_row_for_dot` checks them.
pub fn from_float(ty: Type, isa: Isa, x: &[f32], y: &mut [u8]) -> Result<()> {
    match table::from_float(ty, isa).filter(|_| isa.available()) {
        Some(f) => {
            let blck = ty.blck_size();
            crate::ensure!(
                x.len().is_multiple_of(blck) && y.len() == ty.row_size(x.len()),
                "fromFloat: {} floats do not fill {} bytes of {ty} blocks",
                x.len(),
                y.len()
            );
            // SAFETY: the ISA is available; lengths are whole blocks and match.
            unsafe { f(x, y) };
            Ok(())
        }
        None => quant::quantize_row_for_dot(ty, x, y),
    }
}
