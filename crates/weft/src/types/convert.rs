//! Conversion between f32 and a type's bytes: plain types element by element (little-endian,
//! as ggml stores them), quantized types through the `quant` module in whole blocks
//! (dequantize_row, and quantize_row_for_store: ggml's from_float).

use super::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, quant, Type};
use crate::{Error, Result};

/// The number of elements `nbytes` bytes of `ty` hold (whole blocks for quantized types).
fn element_count(ty: Type, nbytes: usize) -> Result<usize> {
    let size = ty.type_size();
    if !nbytes.is_multiple_of(size) {
        let what = if ty.is_quantized() { "blocks" } else { "elements" };
        return Err(Error::invalid(format!("{nbytes} bytes is not a whole number of {ty} {what} ({size} bytes each)")));
    }
    Ok(nbytes / size * ty.blck_size())
}

/// The bytes `n` elements of `ty` take, or an error if they are not whole blocks.
fn byte_count(ty: Type, n: usize) -> Result<usize> {
    let blck = ty.blck_size();
    if !n.is_multiple_of(blck) {
        return Err(Error::invalid(format!("{n} values are not a whole number of {ty} blocks ({blck} elements each)")));
    }
    Ok(n / blck * ty.type_size())
}

/// Bytes of `ty` to f32 values.
pub fn to_f32(ty: Type, bytes: &[u8]) -> Result<Vec<f32>> {
    let mut out = vec![0f32; element_count(ty, bytes.len())?];
    row_to_f32(ty, bytes, &mut out)?;
    Ok(out)
}

/// f32 values to bytes of `ty` (integers truncate toward zero, saturating, as Rust casts;
/// quantized types quantize the values as one row).
pub fn from_f32(ty: Type, values: &[f32]) -> Result<Vec<u8>> {
    let mut out = vec![0u8; byte_count(ty, values.len())?];
    row_from_f32(ty, values, &mut out)?;
    Ok(out)
}

/// One row of `ty` (whole blocks for quantized types) to f32.
pub fn row_to_f32(ty: Type, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    if ty.is_quantized() {
        return quant::dequantize_row(ty, bytes, out);
    }
    let es = ty.type_size();
    if bytes.len() != out.len() * es {
        return Err(Error::invalid(format!("row of {} {ty} values, expected {}", bytes.len() / es, out.len())));
    }
    for (o, c) in out.iter_mut().zip(bytes.chunks_exact(es)) {
        *o = match ty {
            Type::F32 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            Type::F16 => f16_to_f32(u16::from_le_bytes([c[0], c[1]])),
            Type::BF16 => bf16_to_f32(u16::from_le_bytes([c[0], c[1]])),
            Type::I8 => c[0] as i8 as f32,
            Type::I16 => i16::from_le_bytes([c[0], c[1]]) as f32,
            Type::I32 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32,
            Type::I64 => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32,
            Type::F64 => f64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32,
            _ => f32::NAN,
        };
    }
    Ok(())
}

/// f32 values to one row of `ty` (whole blocks for quantized types, quantized as ggml's
/// from_float does: see `quant::quantize_row_for_store`).
pub fn row_from_f32(ty: Type, values: &[f32], out: &mut [u8]) -> Result<()> {
    if ty.is_quantized() {
        return quant::quantize_row_for_store(ty, values, out);
    }
    let es = ty.type_size();
    if out.len() != values.len() * es {
        return Err(Error::invalid(format!("row of {} bytes of {ty}, expected {}", out.len(), values.len() * es)));
    }
    for (&v, o) in values.iter().zip(out.chunks_exact_mut(es)) {
        match ty {
            Type::F32 => o.copy_from_slice(&v.to_le_bytes()),
            Type::F16 => o.copy_from_slice(&f32_to_f16(v).to_le_bytes()),
            Type::BF16 => o.copy_from_slice(&f32_to_bf16(v).to_le_bytes()),
            Type::I8 => o[0] = v as i8 as u8,
            Type::I16 => o.copy_from_slice(&(v as i16).to_le_bytes()),
            Type::I32 => o.copy_from_slice(&(v as i32).to_le_bytes()),
            Type::I64 => o.copy_from_slice(&(v as i64).to_le_bytes()),
            Type::F64 => o.copy_from_slice(&(v as f64).to_le_bytes()),
            _ => {}
        }
    }
    Ok(())
}
