//! How each K / V element type takes part in FLASH_ATTN_EXT: ggml-cpu's type traits for it
//! (the query row converted to K's vec_dot type by that type's from_float, K's vec_dot, V's
//! to_float). f16 and bf16 rows are read in place; quantized rows (llama.cpp's KV cache types:
//! q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl) use MUL_MAT's vector kernels (`cpu::simd`): the
//! query is quantized to q8_0 / q8_1 and each score is a block dot product, as in ggml.

use std::sync::OnceLock;

use crate::backend::cpu::simd::{self, Isa, RowDot};
use crate::error::{Error, Result};
use crate::types::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, quant, Type};

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

/// The ops of a 16-bit float K/V type, given its conversions from and to f32.
macro_rules! half_kv {
    ($from:expr, $to:expr) => {
        Some(KvRowOps {
            q_row_size: |n| 2 * n,
            q_from_f32: |x, out| {
                half_from_f32(x, out, $from);
                Ok(())
            },
            dot: |k, q, n| Ok(unsafe { half_dot(k, q, n, $to) }),
            to_f32: |v, out| {
                unsafe { half_to_f32(v, out, $to) };
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
        Type::F16 => half_kv!(f32_to_f16, f16_to_f32),
        Type::BF16 => half_kv!(f32_to_bf16, bf16_to_f32),
        Type::Q4_0 => quant_kv!(Type::Q4_0),
        Type::Q4_1 => quant_kv!(Type::Q4_1),
        Type::Q5_0 => quant_kv!(Type::Q5_0),
        Type::Q5_1 => quant_kv!(Type::Q5_1),
        Type::Q8_0 => quant_kv!(Type::Q8_0),
        Type::IQ4_NL => quant_kv!(Type::IQ4_NL),
        _ => None,
    }
}

fn half_from_f32(x: &[f32], out: &mut [u8], conv: fn(f32) -> u16) {
    for (o, &v) in out.chunks_exact_mut(2).zip(x) {
        o.copy_from_slice(&conv(v).to_le_bytes());
    }
}

/// ggml_vec_dot_f16 / _bf16: products of the 16-bit values (exact in f32) summed in f64.
///
/// # Safety
/// `k` points at `n` readable 16-bit values; `q` holds at least `n`.
#[inline]
unsafe fn half_dot(k: *const u8, q: &[u8], n: usize, conv: fn(u16) -> f32) -> f32 {
    let k = k as *const u16;
    let mut sum = 0f64;
    for (i, qb) in q.chunks_exact(2).take(n).enumerate() {
        let qv = conv(u16::from_le_bytes([qb[0], qb[1]]));
        sum += (conv(k.add(i).read_unaligned()) * qv) as f64;
    }
    sum as f32
}

/// # Safety
/// `v` points at `out.len()` readable 16-bit values.
unsafe fn half_to_f32(v: *const u8, out: &mut [f32], conv: fn(u16) -> f32) {
    let v = v as *const u16;
    for (i, o) in out.iter_mut().enumerate() {
        *o = conv(v.add(i).read_unaligned());
    }
}
