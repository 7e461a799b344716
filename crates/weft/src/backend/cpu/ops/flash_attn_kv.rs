//! How each K / V element type takes part in FLASH_ATTN_EXT: ggml-cpu's type traits for it
//! (the query row converted to K's vec_dot type by that type's from_float, K's vec_dot, V's
//! to_float). f16 and bf16 rows are read in place; quantized rows (llama.cpp's KV cache types:
//! q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl) use MUL_MAT's vector kernels (`cpu::simd`): the
//! query is quantized to q8_0 / q8_1 and each score is a block dot product, as in ggml.

use std::sync::OnceLock;

use crate::backend::cpu::float_simd::{kernels, Elem};
use crate::backend::cpu::simd::{self, Isa, RowDot};
use crate::error::{Error, Result};
use crate::types::{quant, Type};

/// One K or V type's part in attention. The kernel only calls these; a new type is a new
/// entry in [`kv_row_ops`].
#[derive(Clone, Copy)]
pub struct KvRowOps {
    /// Bytes of a query row of n elements once converted (row size of K's vec_dot_type).
    pub q_row_size: fn(usize) -> usize,
    /// ggml's from_float of K's vec_dot_type: the query row in the form K rows dot with.
    pub q_from_f32: fn(&[f32], &mut [u8]) -> Result<()>,
    /// ggml's vec_dot: the K row of `n` elements at `k` with the converted query row.
    pub dot: unsafe fn(k: *const u8, q: &[u8], n: usize) -> Result<f32>,
    /// ggml's to_float: the V row at `v` into `out` (its length is the row length).
    pub to_f32: unsafe fn(v: *const u8, out: &mut [f32]) -> Result<()>,
}

/// The ops of a 16-bit float K/V type: `float_simd`'s conversions and row dot (the query
/// rounded to K's type, products summed in f32 lanes as ggml's SIMD vec_dot_f16 does).
macro_rules! half_kv {
    ($elem:expr) => {
        Some(KvRowOps {
            q_row_size: |n| 2 * n,
            q_from_f32: |x, out| {
                let n = x.len().min(out.len() / 2);
                // SAFETY: n elements in, n 16-bit values out.
                unsafe { kernels().f32_to($elem, x.as_ptr(), out.as_mut_ptr(), n) };
                Ok(())
            },
            dot: |k, q, n| {
                let mut v = 0f32;
                debug_assert!(q.len() >= 2 * n);
                // SAFETY: k and q each hold n values of the type.
                unsafe { (kernels().dot($elem))(n, k, 0, 1, q.as_ptr(), &mut v) };
                Ok(v)
            },
            to_f32: |v, out| {
                // SAFETY: v holds out.len() values of the type.
                unsafe { kernels().to_f32($elem, v, out.as_mut_ptr(), out.len()) };
                Ok(())
            },
        })
    };
}

/// The ops of a quantized K/V type (a macro so each entry's functions are plain fn pointers
/// with the type built in).
macro_rules! quant_kv {
    ($ty:expr) => {
        Some(KvRowOps {
            q_row_size: |n| quant::vec_dot_type($ty).row_size(n),
            q_from_f32: |x, out| simd::from_float(quant::vec_dot_type($ty), Isa::best(), x, out),
            dot: |k, q, n| {
                static DOT: OnceLock<Option<RowDot>> = OnceLock::new();
                let dot = DOT
                    .get_or_init(|| RowDot::best($ty))
                    .ok_or_else(|| Error::unsupported(format!("no dot product for {}", $ty)))?;
                crate::ensure!(
                    q.len() == quant::vec_dot_type($ty).row_size(n),
                    "flashAttnExt: query row of {} bytes for {n} elements",
                    q.len()
                );
                Ok(dot.dot(unsafe { std::slice::from_raw_parts(k, $ty.row_size(n)) }, q))
            },
            to_f32: |v, out| unsafe {
                quant::dequantize_row($ty, std::slice::from_raw_parts(v, $ty.row_size(out.len())), out)
            },
        })
    };
}

/// The K/V types flash attention reads. Quantized K and V rows must be packed blocks (the
/// kernel's `supports` checks it).
pub fn kv_row_ops(ty: Type) -> Option<KvRowOps> {
    match ty {
        Type::F16 => half_kv!(Elem::F16),
        Type::BF16 => half_kv!(Elem::BF16),
        Type::Q4_0 => quant_kv!(Type::Q4_0),
        Type::Q4_1 => quant_kv!(Type::Q4_1),
        Type::Q5_0 => quant_kv!(Type::Q5_0),
        Type::Q5_1 => quant_kv!(Type::Q5_1),
        Type::Q8_0 => quant_kv!(Type::Q8_0),
        Type::IQ4_NL => quant_kv!(Type::IQ4_NL),
        _ => None,
    }
}
