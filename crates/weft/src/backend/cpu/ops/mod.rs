//! CPU kernels, one file per op family.

pub mod adamw;
pub mod add1;
pub mod backward;
pub mod binary;
pub mod conv_back;
pub mod conv_transpose;
pub mod copy;
pub mod diag_mask;
pub mod flash_attn;
pub mod flash_attn_kv;
pub mod gather;
pub mod generate;
pub mod get_rows;
pub mod group_norm;
pub mod im2col;
pub mod index;
pub mod loss;
pub mod matmul;
pub mod matmul_float;
pub mod matmul_quant;
pub mod mul_mat_id;
pub mod norm;
pub mod out_prod;
pub mod pool;
pub mod reduce;
pub mod rope;
pub mod rwkv;
pub mod sam;
pub mod softmax;
pub mod ssm;
pub mod tile;
pub mod unary;
pub mod window;

use super::kernel::Cx;
use super::tdata::TData;
use crate::tensor::Tensor;
use crate::types::{quant, Type};
use crate::{Error, Result};

/// Types whose elements CPU kernels read and write one by one.
pub fn is_plain(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::F64)
}

/// Float types the f32-computing kernels accept.
pub fn is_float(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16)
}

/// A quantized tensor whose rows `TData::load_row` dequantizes and `try_store_row`
/// quantizes: a type the quant module serves (not a repacked layout), blocks packed along
/// each row (nb[0] = block size in bytes, as ggml's quantized kernels assert).
pub fn is_quant_rows(t: &Tensor) -> bool {
    let ty = t.ty();
    ty.is_quantized() && quant::serves(ty) && t.nb()[0] == ty.type_size()
}

/// A tensor whose rows the f32-computing kernels read and write: a float type, or
/// quantized rows ([`is_quant_rows`]).
pub fn is_float_or_quant(t: &Tensor) -> bool {
    is_float(t.ty()) || is_quant_rows(t)
}

/// Source `i` of a node, as kernel data. Constructors guarantee presence for the ops
/// that use it; a missing one is still an error, not a panic.
pub fn src(node: &Tensor, i: usize) -> Result<TData> {
    let s = node
        .src(i)
        .ok_or_else(|| Error::invalid(format!("{} node '{}' has no src[{i}]", node.op().name(), node.label())))?;
    TData::of(s)
}

/// Whether the node and all its sources are f32 (the kernels that exist for f32 only).
pub fn all_f32(node: &Tensor) -> bool {
    node.ty() == Type::F32 && node.srcs().iter().all(|s| s.as_ref().is_some_and(|s| s.ty() == Type::F32))
}

/// Calls `f(ir, a row, b row, scratch)` for every row ir of two same-shaped tensors, rows
/// loaded as f32 and split across workers; `scratch` is a row-long buffer of the worker's.
pub fn for_rows2<F>(a: &TData, b: &TData, cx: &Cx, f: F)
where
    F: Fn(usize, &[f32], &[f32], &mut [f32]) + Sync,
{
    let n0 = a.n(0);
    cx.par_ranges(a.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        let (mut x, mut y, mut scratch) = (vec![0f32; n0], vec![0f32; n0], vec![0f32; n0]);
        for ir in rows {
            let (i1, i2, i3) = a.row_coords(ir);
            // SAFETY: ir < nrows, and b has a's shape.
            unsafe {
                a.load_row(i1, i2, i3, &mut x);
                b.load_row(i1, i2, i3, &mut y);
            }
            f(ir, &x, &y, &mut scratch);
        }
    });
}

/// dst row = f(src0 row, src1 row) over every row of three same-shaped tensors, in f32. Both
/// source rows are read before the dst row is written, so in-place nodes are fine.
pub fn map_rows2<F>(node: &Tensor, cx: &Cx, f: F) -> Result<()>
where
    F: Fn(&[f32], &[f32], &mut [f32]) + Sync,
{
    let (a, b) = (src(node, 0)?, src(node, 1)?);
    let d = TData::of(node)?;
    for_rows2(&a, &b, cx, |ir, x, y, out| {
        f(x, y, out);
        let (i1, i2, i3) = d.row_coords(ir);
        // SAFETY: dst has the sources' shape; row ir is this worker's.
        unsafe { d.store_row(i1, i2, i3, out) };
    });
    Ok(())
}

/// A pointer workers share to write disjoint elements of one buffer.
#[derive(Clone, Copy)]
pub struct SyncPtr<T>(pub *mut T);
unsafe impl<T> Send for SyncPtr<T> {}
unsafe impl<T> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// The pointer (a method, so closures capture the Sync wrapper, not the raw field).
    #[inline]
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// Runs `f` compiled for FMA where the CPU has it, so `f32::mul_add` in `f` becomes one
/// instruction (and can vectorize) rather than a libm call. The results are the same either
/// way: mul_add is always the single-rounding fused operation, which is what ggml's reference
/// build (an FMA target contracting `a*b + c` expressions) computed for most of them.
#[inline(always)]
pub fn fused<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "fma")]
        unsafe fn with_fma<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU supports FMA.
            return unsafe { with_fma(f) };
        }
    }
    f()
}

/// y += x * v, fused per element (ggml_vec_mad_f32).
#[inline(always)]
pub fn mad_f32(y: &mut [f32], x: &[f32], v: f32) {
    let n = y.len().min(x.len());
    // SAFETY: n elements of each. The table's loop, not a mul_add here: this crate is not
    // built with FMA, so mul_add outside a `fused` body is a software fmaf call.
    unsafe { (crate::backend::cpu::float_simd::kernels().mad)(y.as_mut_ptr(), x.as_ptr(), v, n) }
}
