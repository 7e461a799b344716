//! ggml's quantized block formats (ggml-quants.c at llama.cpp 5c333e01): reference and
//! importance-matrix quantizers, dequantizers, the scalar dot products against the activation
//! formats (Q8_0 / Q8_1 / Q8_K) and row validation.
//!
//! Quantizers and dequantizers are bit-exact with ggml as its x86-64 CPU build computes them,
//! which is what produced ggml's reference outputs: GCC's fused multiply-adds included (see
//! `scales.rs`), and the AVX `from_float` of q8_0 / q8_1 ([`quantize_row`]). The dot products
//! follow ggml's scalar code with plain (unfused) C arithmetic; the CPU's SIMD kernels sum in
//! other orders and agree to rounding.
//!
//! Every function takes raw bytes, checks lengths up front and returns an [`Error`] (never
//! panics) on bad input. Blocks are `#[repr(C)]` structs with alignment 1 (see [`block`]), so
//! they are viewed in place in byte buffers of any alignment. The I-quant quantizers' search
//! tables (ggml's `iq2xs_init_impl` / `iq3xs_init_impl`) are built on first use, once per
//! process, and shared between threads.
//!
//! The repacked CPU layouts `q4_0_4x4`, `q4_0_4x8` and `q4_0_8x8` are not supported: every
//! function returns a `NotSupported` error for them.

use std::marker::PhantomData;

use bytemuck::Pod;

use crate::error::{Error, Result};
use crate::types::{Type, QK_K};

pub mod block;
#[rustfmt::skip]
pub(crate) mod grid_iq1s;
#[rustfmt::skip]
mod grid_seeds;
#[rustfmt::skip]
pub(crate) mod grids;
pub(crate) mod iq1;
pub(crate) mod iq2;
pub(crate) mod iq3;
pub(crate) mod iq4;
mod iq_search;
pub(crate) mod iq_tables;
pub(crate) mod k;
pub(crate) mod k45;
pub(crate) mod legacy;
mod plain;
mod scales;
pub(crate) mod tq;

#[cfg(test)]
mod tests;

pub use iq1::{BlockIq1M, BlockIq1S};
pub use iq2::{BlockIq2S, BlockIq2Xs, BlockIq2Xxs};
pub use iq3::{BlockIq3S, BlockIq3Xxs};
pub use iq4::{BlockIq4Nl, BlockIq4Xs};
pub use k::{BlockQ2K, BlockQ3K, BlockQ6K, BlockQ8K};
pub use k45::{BlockQ4K, BlockQ5K};
pub use legacy::{BlockQ4_0, BlockQ4_1, BlockQ5_0, BlockQ5_1, BlockQ8_0, BlockQ8_1};
pub use tq::{BlockTq1_0, BlockTq2_0};

/// One block format, written against typed block slices. The public functions below check
/// every length, view the bytes as blocks and dispatch here.
pub(crate) trait Format: 'static {
    const TYPE: Type;
    /// The stored block (for plain types: one element).
    type Block: Pod;
    /// The block of the activation row [`Format::vec_dot`] multiplies with
    /// (`vec_dot_type`).
    type DotBlock: Pod;

    /// `quantize_row_<type>_ref`.
    fn quantize_ref(x: &[f32], y: &mut [Self::Block]) -> Result<()>;

    /// `quantize_row_<type>`, ggml's `from_float` on x86-64: the reference quantizer for
    /// every type except the activation formats Q8_0 and Q8_1, whose SIMD versions round
    /// differently.
    fn quantize_row(x: &[f32], y: &mut [Self::Block]) -> Result<()> {
        Self::quantize_ref(x, y)
    }

    /// What `ggml_quantize_chunk` runs for this type over whole rows of `n_per_row`
    /// elements. Most types fall back to the reference quantizer without an importance
    /// matrix and quantize row by row with one ([`Format::quantize_weighted`]).
    fn quantize_rows(x: &[f32], y: &mut [Self::Block], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        match imatrix {
            None => Self::quantize_ref(x, y),
            Some(qw) => for_each_row::<Self>(x, y, n_per_row, |xr, yr| {
                Self::quantize_weighted(xr, yr, qw);
                Ok(())
            }),
        }
    }

    /// `quantize_row_<type>_impl` for one row with importance weights `qw` (one per column).
    /// Types whose chunk quantizer ignores the importance matrix keep this default.
    fn quantize_weighted(x: &[f32], y: &mut [Self::Block], _qw: &[f32]) {
        // Only reached for types whose reference quantizer cannot fail.
        let _ = Self::quantize_ref(x, y);
    }

    /// `dequantize_row_<type>`.
    fn dequantize(x: &[Self::Block], y: &mut [f32]);

    /// `ggml_vec_dot_<type>_<vec_dot_type>`, scalar version.
    fn vec_dot(x: &[Self::Block], y: &[Self::DotBlock]) -> f32;

    /// `ggml_validate_row_data` for one block: the first scale that is not finite, by
    /// field name, with its value.
    fn bad_scale(b: &Self::Block) -> Option<(&'static str, f32)>;

    /// Whether [`Format::levels`] is defined, and the sign of its levels.
    const LEVELS: Option<LevelSign> = None;

    /// The block as the CPU's quantized GEMM multiplies it: an integer level per element in
    /// `s`, and per 16 elements an affine map, element `i` = `sa[i / 16] * s[i] + ma[i / 16]`
    /// (the dequantized value, up to float rounding). `s` holds the block's elements, `sa`
    /// and `ma` one entry per 16 of them.
    fn levels(_b: &Self::Block, _s: &mut [i8], _sa: &mut [f32], _ma: &mut [f32]) {}
}

/// The range of a format's integer levels ([`Format::levels`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelSign {
    /// Every level is in 0..=127.
    Unsigned,
    /// Levels are in -127..=127.
    Signed,
}

/// Splits a chunk into rows (floats and their blocks) and runs `f` on each.
pub(crate) fn for_each_row<F: Format + ?Sized>(
    x: &[f32],
    y: &mut [F::Block],
    n_per_row: usize,
    mut f: impl FnMut(&[f32], &mut [F::Block]) -> Result<()>,
) -> Result<()> {
    let blocks_per_row = n_per_row / F::TYPE.blck_size();
    if blocks_per_row == 0 {
        return Ok(());
    }
    for (xr, yr) in x.chunks_exact(n_per_row).zip(y.chunks_exact_mut(blocks_per_row)) {
        f(xr, yr)?;
    }
    Ok(())
}

/// The check an f16 scale field gets in `ggml_validate_row_data`.
pub(crate) fn check_half(name: &'static str, h: block::Half) -> Option<(&'static str, f32)> {
    let bits = h.bits();
    // ggml's isinf_fp16 / isnan_fp16: exponent all ones.
    (bits & 0x7c00 == 0x7c00).then(|| (name, h.to_f32()))
}

/// The byte-level entry points of one format.
trait Kernels: Sync {
    fn quantize_ref(&self, src: &[f32], dst: &mut [u8]) -> Result<()>;
    fn quantize_row(&self, src: &[f32], dst: &mut [u8]) -> Result<()>;
    fn quantize_rows(&self, src: &[f32], dst: &mut [u8], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()>;
    fn dequantize(&self, src: &[u8], dst: &mut [f32]) -> Result<()>;
    fn vec_dot(&self, x: &[u8], y: &[u8]) -> Result<f32>;
    fn validate(&self, data: &[u8]) -> Result<()>;
    fn levels_sign(&self) -> Option<LevelSign>;
    fn levels(&self, x: &[u8], s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) -> Result<()>;
}

struct Kern<F>(PhantomData<fn() -> F>);

fn as_blocks<B: Pod>(ty: Type, bytes: &[u8]) -> Result<&[B]> {
    bytemuck::try_cast_slice(bytes)
        .map_err(|e| Error::invalid(format!("{ty}: {} bytes are not whole blocks: {e}", bytes.len())))
}

fn as_blocks_mut<B: Pod>(ty: Type, bytes: &mut [u8]) -> Result<&mut [B]> {
    let len = bytes.len();
    bytemuck::try_cast_slice_mut(bytes)
        .map_err(|e| Error::invalid(format!("{ty}: {len} bytes are not whole blocks: {e}")))
}

impl<F: Format> Kernels for Kern<F> {
    fn quantize_ref(&self, src: &[f32], dst: &mut [u8]) -> Result<()> {
        F::quantize_ref(src, as_blocks_mut(F::TYPE, dst)?)
    }
    fn quantize_row(&self, src: &[f32], dst: &mut [u8]) -> Result<()> {
        F::quantize_row(src, as_blocks_mut(F::TYPE, dst)?)
    }
    fn quantize_rows(&self, src: &[f32], dst: &mut [u8], n_per_row: usize, imatrix: Option<&[f32]>) -> Result<()> {
        F::quantize_rows(src, as_blocks_mut(F::TYPE, dst)?, n_per_row, imatrix)
    }
    fn dequantize(&self, src: &[u8], dst: &mut [f32]) -> Result<()> {
        F::dequantize(as_blocks(F::TYPE, src)?, dst);
        Ok(())
    }
    fn vec_dot(&self, x: &[u8], y: &[u8]) -> Result<f32> {
        let dot_ty = vec_dot_type(F::TYPE);
        Ok(F::vec_dot(as_blocks(F::TYPE, x)?, as_blocks(dot_ty, y)?))
    }
    fn levels_sign(&self) -> Option<LevelSign> {
        F::LEVELS
    }
    fn levels(&self, x: &[u8], s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) -> Result<()> {
        let blocks: &[F::Block] = as_blocks(F::TYPE, x)?;
        let blck = F::TYPE.blck_size();
        crate::ensure!(
            F::LEVELS.is_some() && s.len() == blocks.len() * blck && sa.len() * 16 == s.len() && ma.len() == sa.len(),
            "levels: {} has no integer levels, or {} blocks do not fill {} levels and {} / {} maps",
            F::TYPE,
            blocks.len(),
            s.len(),
            sa.len(),
            ma.len()
        );
        let per = blck / 16;
        for (i, b) in blocks.iter().enumerate() {
            let (s, sa, ma) =
                (&mut s[i * blck..(i + 1) * blck], &mut sa[i * per..(i + 1) * per], &mut ma[i * per..(i + 1) * per]);
            F::levels(b, s, sa, ma);
        }
        Ok(())
    }
    fn validate(&self, data: &[u8]) -> Result<()> {
        let blocks: &[F::Block] = as_blocks(F::TYPE, data)?;
        for (i, b) in blocks.iter().enumerate() {
            if let Some((field, v)) = F::bad_scale(b) {
                let what = if F::TYPE.is_plain() {
                    format!("element {i} is {v}")
                } else {
                    format!("block {i} has a non-finite scale {field} = {v}")
                };
                return Err(Error::invalid(format!("validateRowData: {}: {what}", F::TYPE)));
            }
        }
        Ok(())
    }
}

/// The kernels of `ty`, or why there are none.
fn kernels(ty: Type) -> Result<&'static dyn Kernels> {
    macro_rules! k {
        ($f:ty) => {
            Ok(&Kern::<$f>(PhantomData))
        };
    }
    match ty {
        Type::F32 => k!(plain::F32),
        Type::F16 => k!(plain::F16),
        Type::BF16 => k!(plain::Bf16),
        Type::Q4_0 => k!(legacy::Q4_0),
        Type::Q4_1 => k!(legacy::Q4_1),
        Type::Q5_0 => k!(legacy::Q5_0),
        Type::Q5_1 => k!(legacy::Q5_1),
        Type::Q8_0 => k!(legacy::Q8_0),
        Type::Q8_1 => k!(legacy::Q8_1),
        Type::Q2_K => k!(k::Q2K),
        Type::Q3_K => k!(k::Q3K),
        Type::Q4_K => k!(k45::Q4K),
        Type::Q5_K => k!(k45::Q5K),
        Type::Q6_K => k!(k::Q6K),
        Type::Q8_K => k!(k::Q8K),
        Type::IQ2_XXS => k!(iq2::Iq2Xxs),
        Type::IQ2_XS => k!(iq2::Iq2Xs),
        Type::IQ2_S => k!(iq2::Iq2S),
        Type::IQ3_XXS => k!(iq3::Iq3Xxs),
        Type::IQ3_S => k!(iq3::Iq3S),
        Type::IQ1_S => k!(iq1::Iq1S),
        Type::IQ1_M => k!(iq1::Iq1M),
        Type::IQ4_NL => k!(iq4::Iq4Nl),
        Type::IQ4_XS => k!(iq4::Iq4Xs),
        Type::TQ1_0 => k!(tq::Tq1_0),
        Type::TQ2_0 => k!(tq::Tq2_0),
        Type::Q4_0_4_4 | Type::Q4_0_4_8 | Type::Q4_0_8_8 => Err(Error::unsupported(format!(
            "{ty} is a repacked CPU-only layout (rows interleaved for the aarch64 kernels); weft \
             does not quantize, dequantize or multiply it: use q4_0"
        ))),
        Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::F64 => {
            Err(Error::unsupported(format!("{ty} has no float conversion or dot product in ggml's type traits")))
        }
    }
}

/// Elements in `len` floats as whole blocks of `ty`, or an error naming `what`.
fn whole_blocks(ty: Type, len: usize, what: &str) -> Result<usize> {
    let blck = ty.blck_size();
    crate::ensure!(
        len.is_multiple_of(blck),
        "{what}: {len} elements are not a whole number of {ty} blocks ({blck} elements each)"
    );
    Ok(len / blck * ty.type_size())
}

/// Whether `ty` has integer levels for the CPU's quantized GEMM ([`Format::levels`]), and
/// their range.
pub fn levels_sign(ty: Type) -> Option<LevelSign> {
    kernels(ty).ok()?.levels_sign()
}

/// A row of whole `ty` blocks as integer levels `s` (one per element) and affine maps
/// `sa`, `ma` (one each per 16 elements): element `i` = `sa[i / 16] * s[i] + ma[i / 16]`.
pub fn row_levels(ty: Type, x: &[u8], s: &mut [i8], sa: &mut [f32], ma: &mut [f32]) -> Result<()> {
    kernels(ty)?.levels(x, s, sa, ma)
}

/// ggml's reference row quantizer (`quantize_row_<type>_ref`: deterministic model-file
/// quantization, and for every type but q8_0 / q8_1 also what [`quantize_row`] does).
/// `src.len()` must be a multiple of the block size and `dst` exactly the row size.
/// iq2_xxs, iq2_xs and iq1_s have no reference quantizer in ggml (they need an importance
/// matrix: use [`quantize_chunk`]) and return a `NotSupported` error; iq1_m, which has none
/// either, uses `quantize_iq1_m` without an importance matrix.
pub fn quantize_row_ref(ty: Type, src: &[f32], dst: &mut [u8]) -> Result<()> {
    row_kernels(ty, src, dst)?.quantize_ref(src, dst)
}

/// ggml's `from_float` for `ty` (`quantize_row_<type>`) as the x86-64 CPU backend runs it:
/// what `CPY` into a quantized type and `mul_mat`'s conversion of activations use. The same
/// as [`quantize_row_ref`] except for q8_0 and q8_1, whose AVX versions scale by `127/amax`
/// and round halves to even (the scalar references use `1/d` and round halves away from
/// zero). Same length rules as [`quantize_row_ref`].
pub fn quantize_row(ty: Type, src: &[f32], dst: &mut [u8]) -> Result<()> {
    row_kernels(ty, src, dst)?.quantize_row(src, dst)
}

/// What weft writes when f32 values are stored into a row of `ty`: `CPY` / `DUP` / `CONT`
/// into a quantized type, an `ADD` / `ADD1` whose result is quantized, `fromFloat32`. That is
/// ggml's `from_float` ([`quantize_row`]) for every type that has one. iq2_xxs, iq2_xs and
/// iq1_s have none, because their quantizers need importance weights (ggml's CPU therefore
/// refuses `CPY` into them); weft runs [`quantize_chunk`] with unit weights instead, the
/// dummy importance matrix test-backend-ops quantizes these types with. Their quantizers work
/// on independent 256-element blocks, so one block per row of the chunk gives the same bytes
/// as any other split. (iq1_m, the fourth type without a `from_float`, quantizes without
/// weights: see [`quantize_row_ref`].) Same length rules as [`quantize_row`].
pub fn quantize_row_for_store(ty: Type, src: &[f32], dst: &mut [u8]) -> Result<()> {
    if !requires_imatrix(ty) {
        return quantize_row(ty, src, dst);
    }
    row_kernels(ty, src, dst)?;
    static UNIT_WEIGHTS: [f32; QK_K] = [1.0; QK_K];
    debug_assert_eq!(ty.blck_size(), QK_K);
    quantize_chunk(ty, src, dst, src.len() / QK_K, QK_K, Some(&UNIT_WEIGHTS)).map(|_| ())
}

/// Whether this module converts `ty` (quantize, dequantize, dot product, validation): every
/// float type and every quantized type except the repacked layouts.
pub fn serves(ty: Type) -> bool {
    kernels(ty).is_ok()
}

/// The kernels of `ty` once `src` is checked to be whole blocks and `dst` their row size.
fn row_kernels(ty: Type, src: &[f32], dst: &[u8]) -> Result<&'static dyn Kernels> {
    let k = kernels(ty)?;
    let size = whole_blocks(ty, src.len(), "quantizeRow")?;
    crate::ensure!(
        dst.len() == size,
        "quantizeRow: {} {ty} elements take {size} bytes, but dst has {}",
        src.len(),
        dst.len()
    );
    Ok(k)
}

/// `ggml_quantize_chunk`: quantizes `nrows` rows of `n_per_row` floats with the per-type
/// `quantize_<type>` function ggml uses for model files, optionally guided by an importance
/// matrix (one weight per column). `src` must hold exactly `nrows * n_per_row` floats and `dst`
/// exactly `nrows` rows of the type. Returns the bytes written. q8_1 and q8_K, which
/// `ggml_quantize_chunk` refuses, use their reference quantizers.
pub fn quantize_chunk(
    ty: Type,
    src: &[f32],
    dst: &mut [u8],
    nrows: usize,
    n_per_row: usize,
    imatrix: Option<&[f32]>,
) -> Result<usize> {
    let k = kernels(ty)?;
    if requires_imatrix(ty) && imatrix.is_none() {
        return Err(Error::invalid(format!(
            "quantizeChunk: {ty} requires an importance matrix (ggml_quantize_requires_imatrix)"
        )));
    }
    let total = nrows
        .checked_mul(n_per_row)
        .ok_or_else(|| Error::invalid(format!("quantizeChunk: {nrows} rows of {n_per_row} overflow")))?;
    crate::ensure!(
        src.len() == total,
        "quantizeChunk: src has {} floats, expected nrows * nPerRow = {nrows} * {n_per_row}",
        src.len()
    );
    let row_size = whole_blocks(ty, n_per_row, "quantizeChunk")?;
    let size = row_size * nrows;
    crate::ensure!(
        dst.len() == size,
        "quantizeChunk: {nrows} rows of {n_per_row} {ty} elements take {size} bytes, but dst \
         has {}",
        dst.len()
    );
    if let Some(qw) = imatrix {
        crate::ensure!(
            qw.len() == n_per_row,
            "quantizeChunk: the importance matrix has {} weights, expected one per column ({n_per_row})",
            qw.len()
        );
    }
    if total == 0 {
        return Ok(0);
    }
    quantize_rows_parallel(k, src, dst, nrows, n_per_row, row_size, imatrix)?;
    Ok(size)
}

/// Splits whole rows over rayon's threads: every row is quantized on its own (ggml's chunk
/// quantizers carry nothing from one row to the next), so the bytes are the same as one
/// pass; the first failing span's error, in row order, is the one returned. A span holds at
/// least `MIN_SPAN` values so small tensors stay on the calling thread.
fn quantize_rows_parallel(
    k: &dyn Kernels,
    src: &[f32],
    dst: &mut [u8],
    nrows: usize,
    n_per_row: usize,
    row_size: usize,
    imatrix: Option<&[f32]>,
) -> Result<()> {
    use rayon::prelude::*;
    const MIN_SPAN: usize = 1 << 16;
    let threads = rayon::current_num_threads().max(1);
    let rows_min = MIN_SPAN.div_ceil(n_per_row).max(1);
    // About four spans per thread, so uneven rows (searches that stop early) even out.
    let rows_per_span = nrows.div_ceil(4 * threads).max(rows_min);
    if rows_per_span >= nrows {
        return k.quantize_rows(src, dst, n_per_row, imatrix);
    }
    let results: Vec<Result<()>> = src
        .par_chunks(rows_per_span * n_per_row)
        .zip(dst.par_chunks_mut(rows_per_span * row_size))
        .map(|(x, y)| k.quantize_rows(x, y, n_per_row, imatrix))
        .collect();
    results.into_iter().collect()
}

/// `ggml_quantize_requires_imatrix`: iq2_xxs, iq2_xs and iq1_s cannot be quantized without
/// an importance matrix.
pub fn requires_imatrix(ty: Type) -> bool {
    matches!(ty, Type::IQ2_XXS | Type::IQ2_XS | Type::IQ1_S)
}

/// `dequantize_row_<type>`, and the plain conversions for f32 / f16 / bf16 so callers can
/// treat every float-convertible type alike. `dst.len()` is the element count; `src` must be
/// exactly its row size.
pub fn dequantize_row(ty: Type, src: &[u8], dst: &mut [f32]) -> Result<()> {
    let k = kernels(ty)?;
    let size = whole_blocks(ty, dst.len(), "dequantizeRow")?;
    crate::ensure!(
        src.len() == size,
        "dequantizeRow: {} {ty} elements take {size} bytes, but src has {}",
        dst.len(),
        src.len()
    );
    k.dequantize(src, dst)
}

/// The type the CPU backend converts activations to before the dot product with a row of
/// `ty` (`type_traits_cpu[ty].vec_dot_type`). ggml gives q8_1 itself and leaves q8_K unset
/// (neither has a dot product there); weft pairs q8_K with q8_K like q8_1 with q8_1. Types
/// without any dot product map to themselves.
pub fn vec_dot_type(ty: Type) -> Type {
    match ty {
        Type::Q4_0 | Type::Q5_0 | Type::Q8_0 | Type::IQ4_NL => Type::Q8_0,
        Type::Q4_0_4_4 | Type::Q4_0_4_8 | Type::Q4_0_8_8 => Type::Q8_0,
        Type::Q4_1 | Type::Q5_1 | Type::Q8_1 => Type::Q8_1,
        Type::Q2_K
        | Type::Q3_K
        | Type::Q4_K
        | Type::Q5_K
        | Type::Q6_K
        | Type::Q8_K
        | Type::IQ2_XXS
        | Type::IQ2_XS
        | Type::IQ2_S
        | Type::IQ3_XXS
        | Type::IQ3_S
        | Type::IQ1_S
        | Type::IQ1_M
        | Type::IQ4_XS
        | Type::TQ1_0
        | Type::TQ2_0 => Type::Q8_K,
        Type::F32 | Type::F16 | Type::BF16 | Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::F64 => ty,
    }
}

/// The CPU's `from_float` for a vec_dot type ([`quantize_row`] restricted to q8_0, q8_1,
/// q8_K, f32, f16 and bf16): how ggml converts a row of activations before [`vec_dot`]. Any
/// other `ty` is an error.
pub fn quantize_row_for_dot(ty: Type, src: &[f32], dst: &mut [u8]) -> Result<()> {
    crate::ensure!(
        matches!(ty, Type::Q8_0 | Type::Q8_1 | Type::Q8_K | Type::F32 | Type::F16 | Type::BF16),
        "quantizeRowForDot: {ty} is not an activation (vec_dot) type: expected q8_0, q8_1, q8_K, \
         f32, f16 or bf16"
    );
    quantize_row(ty, src, dst)
}

/// `ggml_vec_dot_<ty>_<vec_dot_type>`: the dot product of `n` elements of row `x` (type `ty`)
/// with row `y` (type [`vec_dot_type`]`(ty)`), computed like ggml's scalar code (the
/// reference a SIMD version is tested against). Both rows must be exactly `n` elements long.
pub fn vec_dot(ty: Type, n: usize, x: &[u8], y: &[u8]) -> Result<f32> {
    let k = kernels(ty)?;
    let yt = vec_dot_type(ty);
    let xs = whole_blocks(ty, n, "vecDot")?;
    let ys = whole_blocks(yt, n, "vecDot")?;
    crate::ensure!(x.len() == xs, "vecDot: {n} {ty} elements take {xs} bytes, but x has {}", x.len());
    crate::ensure!(y.len() == ys, "vecDot: {n} {yt} elements take {ys} bytes, but y has {}", y.len());
    k.vec_dot(x, y)
}

/// `ggml_validate_row_data`: rejects data that is not whole blocks, quant blocks whose scales
/// are NaN or infinite, and NaN / infinite f32, f16 and bf16 values. Integer types always
/// pass. ggml rejects q8_1 outright; weft checks its two f16 fields like the other types.
pub fn validate_row_data(ty: Type, data: &[u8]) -> Result<()> {
    crate::ensure!(
        data.len().is_multiple_of(ty.type_size()),
        "validateRowData: {} bytes are not whole {ty} blocks ({} bytes each)",
        data.len(),
        ty.type_size()
    );
    match ty {
        Type::I8 | Type::I16 | Type::I32 | Type::I64 => Ok(()),
        Type::F64 => {
            for (i, c) in data.chunks_exact(8).enumerate() {
                let v = f64::from_le_bytes(c.try_into().expect("chunks of 8"));
                crate::ensure!(v.is_finite(), "validateRowData: f64: element {i} is {v}");
            }
            Ok(())
        }
        _ => kernels(ty)?.validate(data),
    }
}
