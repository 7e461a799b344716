//! The instruction-set levels the CPU kernels are compiled for, detected at run time in this
//! one place, and the one choice every kernel family follows ([`Isa::best`]): the float
//! kernels (`float_simd`) and the quantized ones (`simd`) each map a level to their widest
//! table at or below it (the float tables need no VNNI; the quantized ones need no level
//! between AVX2 and AVX-512 with VNNI).

use std::sync::OnceLock;

/// An instruction-set level, each including the ones before it on its architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// The scalar reference code.
    Scalar,
    /// x86-64 AVX2 + FMA + F16C.
    Avx2,
    /// The AVX2 level plus AVX-512 F/BW/VL.
    Avx512,
    /// The AVX-512 level plus AVX-512 VNNI (`vpdpbusd`).
    Avx512Vnni,
    /// aarch64 NEON.
    Neon,
    /// aarch64 NEON with the dot-product extension (`sdot`).
    NeonDot,
}

impl Isa {
    pub const ALL: [Isa; 6] = [Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Vnni, Isa::Neon, Isa::NeonDot];

    /// The name `WEFT_CPU_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Avx512Vnni => "avx512-vnni",
            Isa::Neon => "neon",
            Isa::NeonDot => "neon-dot",
        }
    }

    /// Whether this CPU runs the level (every feature of it and of the levels below).
    pub fn available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                Isa::Avx2.available()
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => Isa::Avx512.available() && is_x86_feature_detected!("avx512vnni"),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[cfg(target_arch = "aarch64")]
            Isa::NeonDot => Isa::Neon.available() && std::arch::is_aarch64_feature_detected!("dotprod"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every level this CPU runs, the scalar code first, the widest last.
    pub fn available_all() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.available()).collect()
    }

    /// The level the CPU backend uses, decided once: the widest available, or the one named
    /// by the `WEFT_CPU_ISA` environment variable (`scalar`, `avx2`, `avx512`, `avx512-vnni`,
    /// `neon`, `neon-dot`; any case) where this CPU runs it, to compare levels on one machine.
    /// A name the CPU lacks or does not know leaves the widest.
    pub fn best() -> Isa {
        static BEST: OnceLock<Isa> = OnceLock::new();
        *BEST.get_or_init(|| {
            let widest = *Isa::available_all().last().expect("scalar is always available");
            std::env::var("WEFT_CPU_ISA")
                .ok()
                .and_then(|name| Isa::ALL.into_iter().find(|i| i.name().eq_ignore_ascii_case(name.trim())))
                .filter(|i| i.available())
                .unwrap_or(widest)
        })
    }
}
