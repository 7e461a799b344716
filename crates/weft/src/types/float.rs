//! f16 and bf16 scalars, converted the way ggml converts them: round to nearest, ties to
//! even, and for bf16 NaNs kept quiet (ggml's `ggml_compute_fp32_to_bf16`).

use half::{bf16, f16};

#[inline]
pub fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

#[inline]
pub fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

#[inline]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

#[inline]
pub fn f32_to_bf16(x: f32) -> u16 {
    bf16::from_f32(x).to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ggml's bf16 rounding, written out from ggml-impl.h's description, as the truth.
    fn ggml_bf16(x: f32) -> u16 {
        let i = x.to_bits();
        if i & 0x7fff_ffff > 0x7f80_0000 {
            return ((i >> 16) | 64) as u16;
        }
        ((i + (0x7fff + ((i >> 16) & 1))) >> 16) as u16
    }

    #[test]
    fn bf16_rounds_like_ggml() {
        // Walk a spread of bit patterns, including ties, subnormals, infinities and NaNs.
        let mut bits: u32 = 0;
        for _ in 0..200_000 {
            let x = f32::from_bits(bits);
            assert_eq!(f32_to_bf16(x), ggml_bf16(x), "bits {bits:#x}");
            bits = bits.wrapping_add(214_747);
        }
        for b in [0x3f80_8000u32, 0x3f81_8000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0001, 0x0000_8000] {
            let x = f32::from_bits(b);
            assert_eq!(f32_to_bf16(x), ggml_bf16(x), "bits {b:#x}");
        }
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
    }

    #[test]
    fn f16_round_trips_and_ties_to_even() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        // 1 + 2^-11 lies halfway between 1 and the next f16; ties go to the even mantissa (1.0)
        assert_eq!(f32_to_f16(1.0 + f32::powi(2.0, -11)), 0x3c00);
        // 1 + 3*2^-11 lies halfway between two f16 values; ties go to the even one (..02)
        assert_eq!(f32_to_f16(1.0 + 3.0 * f32::powi(2.0, -11)), 0x3c02);
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // rounds to infinity
        for h in 0..=0xffffu16 {
            let x = f16_to_f32(h);
            if !x.is_nan() {
                assert_eq!(f32_to_f16(x), h);
            }
        }
    }
}
