//! Little-endian scalar fields for the quant block structs.
//!
//! ggml's blocks hold `ggml_half` (u16), `uint16_t`, `int16_t` and `float` fields. Declaring
//! them as byte arrays keeps every block at alignment 1, so a block slice can be viewed in
//! place inside any byte buffer (a GGUF mapping, a tensor's storage) with `bytemuck`, however
//! the buffer happens to be aligned, and the byte order is GGUF's (little-endian) on every
//! host.

use bytemuck::{Pod, Zeroable};

use crate::types::{f16_to_f32, f32_to_f16};

/// An IEEE half stored as its raw bits (ggml's `ggml_half`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(transparent)]
pub struct Half([u8; 2]);

impl Half {
    pub const ZERO: Half = Half([0; 2]);

    #[inline]
    pub fn from_bits(bits: u16) -> Self {
        Half(bits.to_le_bytes())
    }
    #[inline]
    pub fn bits(self) -> u16 {
        u16::from_le_bytes(self.0)
    }
    /// `GGML_FP32_TO_FP16`: round to nearest, ties to even.
    #[inline]
    pub fn from_f32(x: f32) -> Self {
        Self::from_bits(f32_to_f16(x))
    }
    /// `GGML_FP16_TO_FP32` (exact).
    #[inline]
    pub fn to_f32(self) -> f32 {
        f16_to_f32(self.bits())
    }
}

/// A `uint16_t` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(transparent)]
pub struct LeU16([u8; 2]);

impl LeU16 {
    #[inline]
    pub fn new(v: u16) -> Self {
        LeU16(v.to_le_bytes())
    }
    #[inline]
    pub fn get(self) -> u16 {
        u16::from_le_bytes(self.0)
    }
}

/// An `int16_t` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
#[repr(transparent)]
pub struct LeI16([u8; 2]);

impl LeI16 {
    #[inline]
    pub fn new(v: i16) -> Self {
        LeI16(v.to_le_bytes())
    }
    #[inline]
    pub fn get(self) -> i16 {
        i16::from_le_bytes(self.0)
    }
}

/// A `float` field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
#[repr(transparent)]
pub struct LeF32([u8; 4]);

impl LeF32 {
    #[inline]
    pub fn new(v: f32) -> Self {
        LeF32(v.to_le_bytes())
    }
    #[inline]
    pub fn get(self) -> f32 {
        f32::from_le_bytes(self.0)
    }
}
