//! f32, f16 and bf16 as one-element "blocks", so the quant API treats them like any other
//! type: conversion as ggml's `from_float` / `to_float`, and ggml's scalar `ggml_vec_dot_f32`
//! / `_f16` / `_bf16` (each product rounded to f32, summed in f64).

use super::block::{Half, LeF32, LeU16};
use super::{check_half, Format};
use crate::error::Result;
use crate::types::{bf16_to_f32, f32_to_bf16, Type};

/// ggml's scalar float dot: `sumf += (ggml_float)(x[i]*y[i])` with `ggml_float` = double.
fn dot_f64<T: Copy>(x: &[T], y: &[T], to_f32: impl Fn(T) -> f32) -> f32 {
    let mut sum = 0.0f64;
    for (&a, &b) in x.iter().zip(y) {
        sum += (to_f32(a) * to_f32(b)) as f64;
    }
    sum as f32
}

pub struct F32;

impl Format for F32 {
    const TYPE: Type = Type::F32;
    type Block = LeF32;
    type DotBlock = LeF32;

    fn quantize_ref(x: &[f32], y: &mut [LeF32]) -> Result<()> {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = LeF32::new(v);
        }
        Ok(())
    }
    fn dequantize(x: &[LeF32], y: &mut [f32]) {
        for (o, v) in y.iter_mut().zip(x) {
            *o = v.get();
        }
    }
    fn vec_dot(x: &[LeF32], y: &[LeF32]) -> f32 {
        dot_f64(x, y, LeF32::get)
    }
    fn bad_scale(b: &LeF32) -> Option<(&'static str, f32)> {
        let v = b.get();
        (!v.is_finite()).then_some(("value", v))
    }
}

pub struct F16;

impl Format for F16 {
    const TYPE: Type = Type::F16;
    type Block = Half;
    type DotBlock = Half;

    fn quantize_ref(x: &[f32], y: &mut [Half]) -> Result<()> {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = Half::from_f32(v);
        }
        Ok(())
    }
    fn dequantize(x: &[Half], y: &mut [f32]) {
        for (o, v) in y.iter_mut().zip(x) {
            *o = v.to_f32();
        }
    }
    fn vec_dot(x: &[Half], y: &[Half]) -> f32 {
        dot_f64(x, y, Half::to_f32)
    }
    fn bad_scale(b: &Half) -> Option<(&'static str, f32)> {
        check_half("value", *b)
    }
}

pub struct Bf16;

impl Format for Bf16 {
    const TYPE: Type = Type::BF16;
    type Block = LeU16;
    type DotBlock = LeU16;

    /// `ggml_fp32_to_bf16_row_ref`: round to nearest even, NaNs kept quiet.
    fn quantize_ref(x: &[f32], y: &mut [LeU16]) -> Result<()> {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = LeU16::new(f32_to_bf16(v));
        }
        Ok(())
    }
    fn dequantize(x: &[LeU16], y: &mut [f32]) {
        for (o, v) in y.iter_mut().zip(x) {
            *o = bf16_to_f32(v.get());
        }
    }
    fn vec_dot(x: &[LeU16], y: &[LeU16]) -> f32 {
        dot_f64(x, y, |b| bf16_to_f32(b.get()))
    }
    fn bad_scale(b: &LeU16) -> Option<(&'static str, f32)> {
        // ggml: NaN if (bits & 0x7fff) > 0x7f80, infinity if equal.
        (b.get() & 0x7fff >= 0x7f80).then(|| ("value", bf16_to_f32(b.get())))
    }
}
