//! Whole-buffer conversion between f32 and a type's bytes (plain types here; quantized
//! types go through the `quant` module when it is present).

use super::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, Type};
use crate::{Error, Result};

fn check_len(ty: Type, nbytes: usize) -> Result<usize> {
    let es = ty.type_size();
    if !nbytes.is_multiple_of(es) {
        return Err(Error::invalid(format!("{nbytes} bytes is not a whole number of {ty} elements ({es} bytes each)")));
    }
    Ok(nbytes / es)
}

/// Bytes of `ty` to f32 values, little-endian as ggml stores them.
pub fn to_f32(ty: Type, bytes: &[u8]) -> Result<Vec<f32>> {
    if ty.is_quantized() {
        return Err(Error::unimplemented(format!("toFloat32: {ty} is a quantized type; dequantize it")));
    }
    let n = check_len(ty, bytes.len())?;
    let es = ty.type_size();
    let mut out = Vec::with_capacity(n);
    for c in bytes.chunks_exact(es) {
        out.push(match ty {
            Type::F32 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            Type::F16 => f16_to_f32(u16::from_le_bytes([c[0], c[1]])),
            Type::BF16 => bf16_to_f32(u16::from_le_bytes([c[0], c[1]])),
            Type::I8 => c[0] as i8 as f32,
            Type::I16 => i16::from_le_bytes([c[0], c[1]]) as f32,
            Type::I32 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32,
            Type::I64 => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32,
            Type::F64 => f64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32,
            _ => f32::NAN,
        });
    }
    Ok(out)
}

/// f32 values to bytes of `ty` (integers truncate toward zero, saturating, as Rust casts).
pub fn from_f32(ty: Type, values: &[f32]) -> Result<Vec<u8>> {
    if ty.is_quantized() {
        return Err(Error::unimplemented(format!("fromFloat32: {ty} is a quantized type; quantize it")));
    }
    let mut out = Vec::with_capacity(values.len() * ty.type_size());
    for &v in values {
        match ty {
            Type::F32 => out.extend_from_slice(&v.to_le_bytes()),
            Type::F16 => out.extend_from_slice(&f32_to_f16(v).to_le_bytes()),
            Type::BF16 => out.extend_from_slice(&f32_to_bf16(v).to_le_bytes()),
            Type::I8 => out.push(v as i8 as u8),
            Type::I16 => out.extend_from_slice(&(v as i16).to_le_bytes()),
            Type::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
            Type::I64 => out.extend_from_slice(&(v as i64).to_le_bytes()),
            Type::F64 => out.extend_from_slice(&(v as f64).to_le_bytes()),
            _ => {}
        }
    }
    Ok(out)
}

/// One row of `ty` (whole blocks for quantized types) to f32.
pub fn row_to_f32(ty: Type, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    let v = to_f32(ty, bytes)?;
    if v.len() != out.len() {
        return Err(Error::invalid(format!("row of {} {ty} values, expected {}", v.len(), out.len())));
    }
    out.copy_from_slice(&v);
    Ok(())
}

/// f32 values to one row of `ty` (whole blocks for quantized types).
pub fn row_from_f32(ty: Type, values: &[f32], out: &mut [u8]) -> Result<()> {
    let b = from_f32(ty, values)?;
    if b.len() != out.len() {
        return Err(Error::invalid(format!("row of {} bytes of {ty}, expected {}", b.len(), out.len())));
    }
    out.copy_from_slice(&b);
    Ok(())
}
