//! Vector kernels for the CPU's float paths: row dot products of f32 / f16 / bf16 (MUL_MAT's
//! mat-vec, MUL_MAT_ID, OUT_PROD, FLASH_ATTN_EXT), row conversions between f32 and f16 /
//! bf16, and the elementwise loops of the llama path (ADD and friends, RMS_NORM's sum of
//! squares, scaling, multiply-add).
//!
//! Each ISA fills one [`Kernels`] table (`avx512.rs`, `avx2.rs`, `neon.rs`); `scalar.rs` is
//! the fallback and the tests' oracle. [`kernels`] picks the best table the CPU runs, once;
//! [`Kernels::for_isa`] gives a chosen one (tests force every ISA present in turn).
//!
//! Numerics: conversions and elementwise arithmetic give the same bits on every ISA (f16
//! and bf16 round to nearest even as ggml's converters do). Dot products and sums of squares
//! sum in a different order per ISA (lanes, then a tree), so they agree with the scalar
//! oracle to rounding, not bit for bit.

/// An ISA module's [`Kernels`] table, from its generic kernels (`dot::<L>`, `widen::<L>`
/// over its `F32` / `F16` / `Bf16` loaders; `bin`, `sum_sq_f64`, `scale`) and the two
/// narrowing functions given.
macro_rules! isa_table {
    ($isa:expr, $narrow_f16:path, $narrow_bf16:path) => {
        pub static KERNELS: Kernels = Kernels {
            isa: $isa,
            dot_f32: |k, a, lda, rows, b, out| unsafe { dot::<F32>(k, a, lda, rows, b, out) },
            dot_f16: |k, a, lda, rows, b, out| unsafe { dot::<F16>(k, a, lda, rows, b, out) },
            dot_bf16: |k, a, lda, rows, b, out| unsafe { dot::<Bf16>(k, a, lda, rows, b, out) },
            f16_to_f32: |s, d, n| unsafe { widen::<F16>(s, d, n) },
            bf16_to_f32: |s, d, n| unsafe { widen::<Bf16>(s, d, n) },
            f32_to_f16: |s, d, n| unsafe { $narrow_f16(s, d, n) },
            f32_to_bf16: |s, d, n| unsafe { $narrow_bf16(s, d, n) },
            add: |x, y, o, n| unsafe { bin(x, y, o, n, Bin::Add) },
            sub: |x, y, o, n| unsafe { bin(x, y, o, n, Bin::Sub) },
            mul: |x, y, o, n| unsafe { bin(x, y, o, n, Bin::Mul) },
            div: |x, y, o, n| unsafe { bin(x, y, o, n, Bin::Div) },
            sum_sq_f64: |x, n| unsafe { sum_sq_f64(x, n) },
            scale: |x, s, o, n| unsafe { scale(x, s, o, n) },
            mad: |y, x, v, n| unsafe { mad(y, x, v, n) },
            exp_sum: |x, m, y, n| unsafe { exp_sum(x, m, y, n) },
        };
    };
}

/// The elementwise binary ops: each ISA's `bin` loop takes one.
#[derive(Clone, Copy)]
pub(crate) enum Bin {
    Add,
    Sub,
    Mul,
    Div,
}

impl Bin {
    /// The op on one pair (the scalar table and the SIMD tails).
    #[inline(always)]
    pub(crate) fn scalar(self, a: f32, b: f32) -> f32 {
        match self {
            Bin::Add => a + b,
            Bin::Sub => a - b,
            Bin::Mul => a * b,
            Bin::Div => a / b,
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(test)]
mod tests;

use std::sync::OnceLock;

pub use crate::backend::cpu::isa::Isa;
use crate::types::Type;

/// The float element types of rows these kernels read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    F32,
    F16,
    BF16,
}

impl Elem {
    pub fn of(ty: Type) -> Option<Elem> {
        match ty {
            Type::F32 => Some(Elem::F32),
            Type::F16 => Some(Elem::F16),
            Type::BF16 => Some(Elem::BF16),
            _ => None,
        }
    }
    pub fn size(self) -> usize {
        match self {
            Elem::F32 => 4,
            Elem::F16 | Elem::BF16 => 2,
        }
    }
}

/// `out[r] = sum(a_r[i] * b[i] for i < k)` for `rows` rows (1..=4) of a, `lda` bytes apart,
/// and one row b, all of the table entry's element type; the sum in f32.
pub type DotFn = unsafe fn(k: usize, a: *const u8, lda: usize, rows: usize, b: *const u8, out: *mut f32);
/// `n` elements of a 16-bit float type widened to f32.
pub type WidenFn = unsafe fn(src: *const u16, dst: *mut f32, n: usize);
/// `n` f32 rounded to a 16-bit float type (nearest, ties to even).
pub type NarrowFn = unsafe fn(src: *const f32, dst: *mut u16, n: usize);
/// `out[i] = x[i] op y[i]` for `i < n`; `out` may be `x` or `y` (each element is read
/// before it is written).
pub type BinFn = unsafe fn(x: *const f32, y: *const f32, out: *mut f32, n: usize);

/// One ISA's kernels. Every function is `unsafe` only for its raw pointers: each is called
/// only from a table made for a CPU that has the ISA.
pub struct Kernels {
    /// The level the table is compiled for (the tests name tables by it).
    #[cfg_attr(not(test), allow(dead_code))]
    pub isa: Isa,
    pub dot_f32: DotFn,
    pub dot_f16: DotFn,
    pub dot_bf16: DotFn,
    pub f16_to_f32: WidenFn,
    pub bf16_to_f32: WidenFn,
    pub f32_to_f16: NarrowFn,
    pub f32_to_bf16: NarrowFn,
    pub add: BinFn,
    pub sub: BinFn,
    pub mul: BinFn,
    pub div: BinFn,
    /// `sum((x[i] * x[i]) as f64)`: each square rounded to f32, summed in f64 (ggml's
    /// RMS_NORM accumulates `ggml_float`).
    pub sum_sq_f64: unsafe fn(x: *const f32, n: usize) -> f64,
    /// `out[i] = x[i] * s` (`out` may be `x`).
    pub scale: unsafe fn(x: *const f32, s: f32, out: *mut f32, n: usize),
    /// `y[i] = fma(x[i], v, y[i])`, one rounding per element on every table
    /// (ggml_vec_mad_f32 in an FMA build; the scalar table's `mul_add` is the same).
    pub mad: unsafe fn(y: *mut f32, x: *const f32, v: f32, n: usize),
    /// SOFT_MAX's core: `y[i] = exp(x[i] - max)`, returning the sum of the y in f64 (`y`
    /// may be `x`). AVX-512 evaluates exp as a degree-5 polynomial after range reduction
    /// (the approximation ggml's `ggml_v_expf` uses, within 2 ulp of the correctly rounded
    /// value) and sums each vector in f32 before adding it to the f64 total, as ggml does;
    /// the other tables take `f32::exp` per element and sum in f64.
    pub exp_sum: unsafe fn(x: *const f32, max: f32, y: *mut f32, n: usize) -> f64,
}

impl Kernels {
    /// The widest table at or below `isa` (AVX-512 with or without VNNI takes the AVX-512
    /// table, NEON with or without `dotprod` the NEON one), if this CPU runs `isa`.
    pub fn for_isa(isa: Isa) -> Option<&'static Kernels> {
        if !isa.available() {
            return None;
        }
        match isa {
            Isa::Scalar => Some(&scalar::KERNELS),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => Some(&avx2::KERNELS),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 | Isa::Avx512Vnni => Some(&avx512::KERNELS),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon | Isa::NeonDot => Some(&neon::KERNELS),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The dot product for rows of `elem`.
    pub fn dot(&self, elem: Elem) -> DotFn {
        match elem {
            Elem::F32 => self.dot_f32,
            Elem::F16 => self.dot_f16,
            Elem::BF16 => self.dot_bf16,
        }
    }

    /// Row `src` (n elements of `elem`) as f32 into `dst`.
    ///
    /// # Safety
    /// `src` readable for n elements of `elem`, `dst` writable for n f32. `src` need not be
    /// aligned to its element (a view's rows may start anywhere): f32 rows are copied as bytes.
    pub unsafe fn to_f32(&self, elem: Elem, src: *const u8, dst: *mut f32, n: usize) {
        match elem {
            Elem::F32 => std::ptr::copy_nonoverlapping(src, dst as *mut u8, 4 * n),
            Elem::F16 => (self.f16_to_f32)(src as *const u16, dst, n),
            Elem::BF16 => (self.bf16_to_f32)(src as *const u16, dst, n),
        }
    }

    /// Row `src` (n f32) stored as `elem` at `dst` (rounded to nearest even).
    ///
    /// # Safety
    /// `src` readable for n f32, `dst` writable for n elements of `elem` (need not be aligned to
    /// it: f32 rows are copied as bytes).
    pub unsafe fn f32_to(&self, elem: Elem, src: *const f32, dst: *mut u8, n: usize) {
        match elem {
            Elem::F32 => std::ptr::copy_nonoverlapping(src as *const u8, dst, 4 * n),
            Elem::F16 => (self.f32_to_f16)(src, dst as *mut u16, n),
            Elem::BF16 => (self.f32_to_bf16)(src, dst as *mut u16, n),
        }
    }
}

/// The table of the CPU backend's ISA ([`Isa::best`]: the widest this CPU runs, or the one
/// `WEFT_CPU_ISA` names), looked up once.
pub fn kernels() -> &'static Kernels {
    static TABLE: OnceLock<&'static Kernels> = OnceLock::new();
    TABLE.get_or_init(|| Kernels::for_isa(Isa::best()).unwrap_or(&scalar::KERNELS))
}

/// How far ahead of the cache line it is reading in each of its four a rows a row dot asks
/// for that row's data (`prefetcht1`, into L2). At n = 1 every weight is read once, from
/// DRAM in a model; the cores' own prefetchers kept fewer lines in flight for the f16 and
/// bf16 loops (a step widens half a line of each row) than for f32's, and f16 streamed
/// 24-26 GB/s where f32 streamed 32. MUL_MAT 4096 x 14336 n = 1, 2 threads, 900 MiB of
/// copies cycled (every weight from DRAM), old and new build alternating, both orders, best
/// us: f16 4424 / 4703 -> 3810 / 4162, bf16 4581 / 4752 -> 3918 / 4209, f32 7181 / 7573 ->
/// 6989 / 7344, same bits; one matrix call after call (AVX2): f16 4101 / 4103 -> 3454 /
/// 3464, bf16 4327 / 4319 -> 3540 / 3615. Per row, f16 from DRAM: 256 B ahead 4324 us,
/// 512 B 4208, 1 KiB 3936, 2 KiB 4065, 1 MiB (no use) 5214. NEON's loops do not ask (not
/// measured on an ARM machine).
#[cfg(target_arch = "x86_64")]
const ROW_AHEAD: usize = 1024;

/// Asks for the cache line [`ROW_AHEAD`] bytes past byte `at` of each row (past a row's end
/// that is the next row's: a prefetch is a hint and never faults).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn ask_ahead(rows: [*const u8; 4], at: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    for row in rows {
        // SAFETY: a prefetch reads nothing architecturally and never faults (SSE, baseline
        // on x86_64).
        unsafe { _mm_prefetch::<_MM_HINT_T1>(row.wrapping_add(at + ROW_AHEAD) as *const i8) }
    }
}
