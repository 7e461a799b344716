//! The vector operations the quantized kernels are written in: 256 bits of integers and 8
//! f32, with the semantics of the AVX2 instructions ggml's x86 kernels use (each method names
//! its instruction). Every kernel is written once against [`Simd`] and compiled for each ISA
//! (`x86.rs`: AVX2, and AVX-512 with VNNI; `neon.rs`: two 128-bit registers per vector).
//!
//! An implementing type is a zero-sized token: holding one means the CPU has the ISA, which
//! is what makes the methods safe to call. Tokens are only made by the per-ISA entry points
//! (`#[target_feature]` functions reached after run-time detection), and every method is
//! `#[inline(always)]`, so each kernel compiles into one function of that ISA's instructions.
//!
//! Never call these methods inside a closure (`array::from_fn`, `map`, a closure passed to a
//! helper): a closure is compiled as a function of its own that does not inherit the entry
//! point's `#[target_feature]`s, so the intrinsics in it are not inlined but called, each
//! vector passed through memory. That made iq2_xxs, iq2_xs, iq2_s, iq3_xxs and iq3_s about
//! ten times slower than ggml; `objdump -d` of the addon listing no call to
//! `core::core_arch::x86::*` is the check. Use loops, `#[inline(always)]` functions or
//! macros; closures of scalar code (table lookups for `set_u64`) are fine.

use crate::types::quant::grids::KSIGNS_IQ2XS;

/// One ISA's vector operations. `V` holds 32 bytes, read as 32 `i8`/`u8`, 16 `i16` or 8
/// `i32` lanes depending on the operation; `F` holds 8 `f32`. "Half" means one 128-bit half
/// of a `V` (bytes 0..16 or 16..32): shuffles act within halves, as on AVX2.
pub(crate) trait Simd: Copy {
    type V: Copy;
    type F: Copy;

    /// Whether `dot4` is VNNI's `vpdpbusd`: exact for every unsigned byte `u` (not only below
    /// 128 with pairs inside i16, as AVX2's `maddubs` and NEON's signed `sdot` need), and one
    /// instruction with its accumulation (`dot4_acc`). Kernels pick forms by it.
    const VNNI: bool = false;

    // ---- loads, stores, constants -------------------------------------------------------

    /// 32 bytes (`_mm256_loadu_si256`).
    fn load(self, p: &[u8; 32]) -> Self::V;
    /// 16 bytes into both halves.
    fn load_dup(self, p: &[u8; 16]) -> Self::V;
    /// ggml's `bytes_from_nibbles_32`: the low nibbles of 16 bytes in bytes 0..16, the high
    /// nibbles in bytes 16..32.
    fn nibbles(self, p: &[u8; 16]) -> Self::V;
    fn store(self, v: Self::V, out: &mut [u8; 32]);
    fn zero(self) -> Self::V;
    fn splat_i8(self, x: i8) -> Self::V;
    fn splat_i16(self, x: i16) -> Self::V;
    fn splat_i32(self, x: i32) -> Self::V;
    /// i16 lanes 0..8 = `lo`, lanes 8..16 = `hi`.
    fn splat_i16_halves(self, lo: i16, hi: i16) -> Self::V;
    /// Four 64-bit lanes, `x[0]` in bytes 0..8 (`_mm256_set_epi64x(x[3], x[2], x[1], x[0])`).
    fn set_u64(self, x: [u64; 4]) -> Self::V;
    /// Eight 32-bit lanes, `x[0]` in bytes 0..4.
    fn set_u32(self, x: [u32; 8]) -> Self::V;

    // ---- bitwise and lane arithmetic (wrapping) ----------------------------------------

    fn and(self, a: Self::V, b: Self::V) -> Self::V;
    fn or(self, a: Self::V, b: Self::V) -> Self::V;
    fn xor(self, a: Self::V, b: Self::V) -> Self::V;
    /// `!a & b` (`_mm256_andnot_si256`).
    fn andnot(self, a: Self::V, b: Self::V) -> Self::V;
    fn add_i8(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub_i8(self, a: Self::V, b: Self::V) -> Self::V;
    fn add_i16(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub_i16(self, a: Self::V, b: Self::V) -> Self::V;
    fn add_i32(self, a: Self::V, b: Self::V) -> Self::V;
    /// i32 lanes a - b (wrapping).
    fn sub_i32(self, a: Self::V, b: Self::V) -> Self::V;
    /// Logical right shift of the 16-bit lanes by `n` < 16 (`_mm256_srli_epi16`).
    fn srl_i16(self, a: Self::V, n: u32) -> Self::V;
    /// Left shift of the 16-bit lanes by `n` < 16.
    fn sll_i16(self, a: Self::V, n: u32) -> Self::V;
    /// 0xff where the bytes are equal, else 0.
    fn cmpeq_i8(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a` negated where `b < 0`, zeroed where `b == 0` (`_mm256_sign_epi8`).
    fn sign_i8(self, a: Self::V, b: Self::V) -> Self::V;
    /// Per half: byte i = `table[idx[i] & 15]`, or 0 where bit 7 of `idx[i]` is set
    /// (`_mm256_shuffle_epi8`). Callers only pass indices < 16 or with bit 7 set.
    fn shuffle_i8(self, table: Self::V, idx: Self::V) -> Self::V;

    /// Bytes 0..16 sign-extended to 16 i16 lanes (`_mm256_cvtepi8_epi16` of the low half).
    fn widen_i8_i16(self, v: Self::V) -> Self::V;
    /// Bytes 0..16 zero-extended to 16 i16 lanes (`_mm256_cvtepu8_epi16`).
    fn widen_u8_i16(self, v: Self::V) -> Self::V;
    /// The low half in both halves.
    fn dup_lo(self, v: Self::V) -> Self::V;
    /// The high half in both halves.
    fn dup_hi(self, v: Self::V) -> Self::V;

    // ---- products -------------------------------------------------------------------------

    /// i16 lane k = u[2k] * s[2k] + u[2k+1] * s[2k+1], `u` unsigned, `s` signed
    /// (`_mm256_maddubs_epi16`). Callers keep the sums inside i16 (no saturation happens).
    fn maddubs(self, u: Self::V, s: Self::V) -> Self::V;
    /// i32 lane j = a[2j] * b[2j] + a[2j+1] * b[2j+1] over i16 lanes (`_mm256_madd_epi16`).
    fn madd_i16(self, a: Self::V, b: Self::V) -> Self::V;
    /// i16 lanes a * b, the low 16 bits (`_mm256_mullo_epi16`).
    #[inline(always)]
    fn mullo_i16(self, a: Self::V, b: Self::V) -> Self::V {
        lanewise::<Self, 2>(self, a, b, |x, y| i16::from_le_bytes(x).wrapping_mul(i16::from_le_bytes(y)).to_le_bytes())
    }
    /// i32 lane l = the low 16 bits of `a`'s lane l, then those of `b`'s above them: two
    /// vectors of i16-sized i32 lanes as i16 pairs for `madd_i16` (`vpermt2w`).
    #[inline(always)]
    fn interleave_lo16(self, a: Self::V, b: Self::V) -> Self::V {
        lanewise::<Self, 4>(self, a, b, |x, y| [x[0], x[1], y[0], y[1]])
    }
    /// i32 lanes 0..4 = sums of four i16 products, a[4l..4l+4] . b[4l..4l+4]; lanes 4..8 = 0
    /// (`_mm256_madd_epi16`, then `_mm_hadd_epi32` of its halves: ggml's K-quant minimums).
    fn madd_i16_x4(self, a: Self::V, b: Self::V) -> Self::V;
    /// i32 lane j = sum over k < 4 of u[4j+k] * s[4j+k], `u` unsigned, `s` signed, exact:
    /// `maddubs` then `madd_i16` with ones on AVX2, `vpdpbusd` with VNNI, `sdot` on NEON.
    /// Callers keep `u` below 128 (NEON reads it as signed) and pairs inside i16 (AVX2).
    fn dot4(self, u: Self::V, s: Self::V) -> Self::V;

    // ---- f32 --------------------------------------------------------------------------------

    fn fzero(self) -> Self::F;
    fn fsplat(self, x: f32) -> Self::F;
    /// i32 lanes to f32, rounding to nearest (`_mm256_cvtepi32_ps`).
    fn cvt_i32(self, v: Self::V) -> Self::F;
    /// `a * b + c`, fused.
    fn fmadd(self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn fadd(self, a: Self::F, b: Self::F) -> Self::F;
    fn fstore(self, v: Self::F) -> [f32; 8];
    fn fload(self, p: &[f32; 8]) -> Self::F;
    /// 8 f32 from 32 bytes of any alignment (little-endian).
    fn fload_bytes(self, p: &[u8; 32]) -> Self::F;
    fn fmul(self, a: Self::F, b: Self::F) -> Self::F;
    fn fsub(self, a: Self::F, b: Self::F) -> Self::F;
    /// max(acc, |v|) lane-wise, for finite values.
    fn fmax_abs(self, acc: Self::F, v: Self::F) -> Self::F;
    /// The f32 bit patterns as i32 lanes.
    fn fbits(self, v: Self::F) -> Self::V;
    /// f32 lanes to i32 rounding half to even (`_mm256_cvtps_epi32`), for values in range.
    fn round_i32(self, v: Self::F) -> Self::V;
    /// Four vectors of i32 lanes to 32 bytes in lane order, saturating (ggml's
    /// `packs_epi32`, `packs_epi16` and lane permute).
    fn pack_i8(self, v: [Self::V; 4]) -> Self::V;
    /// The sum of the 8 i32 lanes (wrapping).
    fn hsum_i32(self, v: Self::V) -> i32;

    /// Ask for the cache line at `p` into L2 (`prefetcht1`, see `prefetch.rs`); a hint that
    /// never faults, so `p` may point anywhere. A no-op where the ISA's form is not wired up.
    #[inline(always)]
    fn prefetch(self, _p: *const u8) {}

    // ---- shared compositions ----------------------------------------------------------------

    /// ggml's `GGML_FP16_TO_FP32` as its x86 build does it: a lookup in a table of all
    /// 65536 halves (one load; converting in registers costs more, see `F16_TABLE`).
    #[inline(always)]
    fn f16(self, bits: u16) -> f32 {
        half_to_f32(bits)
    }

    /// The two halves at `p` as f32 in lanes 0 and 1, exactly (`vcvtph2ps` on x86, the
    /// table elsewhere; a signalling NaN may come back quiet); the other lanes 0. A block's
    /// two leading scales in one conversion.
    #[inline(always)]
    fn f16x2(self, p: &[u8; 4]) -> Self::F {
        let mut x = [0f32; 8];
        x[0] = self.f16(u16::from_le_bytes([p[0], p[1]]));
        x[1] = self.f16(u16::from_le_bytes([p[2], p[3]]));
        self.fload(&x)
    }

    /// Lane 0 of `v` in every lane.
    #[inline(always)]
    fn fdup0(self, v: Self::F) -> Self::F {
        self.fsplat(self.fstore(v)[0])
    }

    /// `acc + dot4(u, s)` (one `vpdpbusd` / `sdot` where the ISA has it).
    #[inline(always)]
    fn dot4_acc(self, acc: Self::V, u: Self::V, s: Self::V) -> Self::V {
        self.add_i32(acc, self.dot4(u, s))
    }

    /// `acc + dot4_signed(x, y)`.
    #[inline(always)]
    fn dot4_signed_acc(self, acc: Self::V, x: Self::V, y: Self::V) -> Self::V {
        self.add_i32(acc, self.dot4_signed(x, y))
    }

    /// ggml's `hsum_float_8`: ((x0 + x4) + (x2 + x6)) + ((x1 + x5) + (x3 + x7)).
    #[inline(always)]
    fn hsum(self, v: Self::F) -> f32 {
        let x = self.fstore(v);
        let r = [x[0] + x[4], x[1] + x[5], x[2] + x[6], x[3] + x[7]];
        (r[0] + r[2]) + (r[1] + r[3])
    }

    /// `x` with byte i negated where bit i of `bits` is set: ggml's `(s ^ x) - s` with
    /// `s = bytes_from_bits_32(bits)`.
    #[inline(always)]
    fn neg_where(self, x: Self::V, bits: u32) -> Self::V {
        let m = self.bits_to_bytes(bits);
        self.sub_i8(self.xor(m, x), m)
    }

    /// `x` signed by iq2_xxs / iq3_xxs sign fields: the 7-bit fields 0, 7, 14, 21 of `w`
    /// (higher bits ignored), field k for bytes 8k..8k+8, byte j < 7 negated where bit j is
    /// set and byte 7 where the field has an odd number of set bits (the implied eighth sign
    /// that makes the count even). ggml's form: `sign_i8` by four rows of `keven_signs_q2xs`.
    #[inline(always)]
    fn apply_even_signs(self, x: Self::V, w: u32) -> Self::V {
        let rows = std::array::from_fn(|k| KEVEN_SIGNS[((w >> (7 * k)) & 127) as usize]);
        self.sign_i8(x, self.set_u64(rows))
    }

    /// `x` plus `v` in the bytes whose bit of `bits` is set (bit i for byte i).
    #[inline(always)]
    fn add_where(self, x: Self::V, bits: u32, v: Self::V) -> Self::V {
        self.add_i8(x, self.and(self.bits_to_bytes(bits), v))
    }

    /// `x` plus `v` in the bytes whose byte of `m` has bit `bit` (< 8) set.
    #[inline(always)]
    fn add_where_bit(self, x: Self::V, m: Self::V, bit: u32, v: Self::V) -> Self::V {
        let b = self.splat_i8((1u8 << bit) as i8);
        self.add_i8(x, self.and(self.cmpeq_i8(self.and(m, b), b), v))
    }

    /// ggml's `bytes_from_bits_32`: byte i = 0xff where bit i of `bits` is set, else 0.
    #[inline(always)]
    fn bits_to_bytes(self, bits: u32) -> Self::V {
        let spread = self.shuffle_i8(self.splat_i32(bits as i32), self.load(&SPREAD_BYTES));
        let masked = self.or(spread, self.set_u64([0x7fbf_dfef_f7fb_fdfe; 4]));
        self.cmpeq_i8(masked, self.splat_i8(-1))
    }

    /// The signed bytes of `x` times those of `y`, four at a time (`mul_sum_i8_pairs` without
    /// the float conversion): |x| against y signed like x.
    #[inline(always)]
    fn dot4_signed(self, x: Self::V, y: Self::V) -> Self::V {
        self.dot4(self.sign_i8(x, x), self.sign_i8(y, x))
    }

    /// ggml's `mul_add_epi8`: `maddubs(|x|, y signed like x)`.
    #[inline(always)]
    fn maddubs_signed(self, x: Self::V, y: Self::V) -> Self::V {
        self.maddubs(self.sign_i8(x, x), self.sign_i8(y, x))
    }
}

/// `f` on each `W`-byte lane of `a` and `b`, through memory: the portable form of the lane
/// operations only VNNI kernels call (the x86 tokens have their own).
#[inline(always)]
fn lanewise<S: Simd, const W: usize>(s: S, a: S::V, b: S::V, f: impl Fn([u8; W], [u8; W]) -> [u8; W]) -> S::V {
    let (mut x, mut y) = ([0u8; 32], [0u8; 32]);
    s.store(a, &mut x);
    s.store(b, &mut y);
    for (u, v) in x.as_chunks_mut::<W>().0.iter_mut().zip(y.as_chunks::<W>().0) {
        *u = f(*u, *v);
    }
    s.load(&x)
}

/// ggml's `keven_signs_q2xs`: 7 stored sign bits (plus the even-parity eighth) as 8 bytes
/// of +1 / -1, to multiply activations with `sign_i8` (`Simd::apply_even_signs`'s
/// portable form).
static KEVEN_SIGNS: [u64; 128] = {
    let mut t = [0u64; 128];
    let mut i = 0;
    while i < 128 {
        let mut e = 0;
        while e < 8 {
            let byte: u64 = if (KSIGNS_IQ2XS[i] >> e) & 1 == 1 { 0xff } else { 0x01 };
            t[i] |= byte << (8 * e);
            e += 1;
        }
        i += 1;
    }
    t
};

/// The f32 bits of every f16 (ggml's `ggml_table_f32_f16`, built at compile time). A scale
/// per block is converted in every dot product: F16C's `vcvtph2ps` needs the half moved into
/// a vector register first (three instructions where the table takes one load), and LLVM
/// merges that move into whatever register is free, often an accumulator, chaining the
/// blocks' latencies.
static F16_TABLE: [u32; 65536] = {
    let mut t = [0u32; 65536];
    let mut h = 0;
    while h < 65536 {
        t[h] = f16_bits_to_f32_bits(h as u16);
        h += 1;
    }
    t
};

/// `F16_TABLE` lookup: the f32 value of the half with these bits.
#[inline(always)]
pub(crate) fn half_to_f32(bits: u16) -> f32 {
    f32::from_bits(F16_TABLE[bits as usize])
}

/// IEEE half to single, exactly (subnormal halves become normal singles).
const fn f16_bits_to_f32_bits(h: u16) -> u32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    if exp == 0 {
        if man == 0 {
            return sign;
        }
        // Subnormal: shift the leading one up to the implicit bit.
        let (mut e, mut m) = (127 - 15 + 1, man);
        while m & 0x400 == 0 {
            m <<= 1;
            e -= 1;
        }
        sign | (e << 23) | ((m & 0x3ff) << 13)
    } else if exp == 31 {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 112) << 23) | (man << 13)
    }
}

/// Byte i of each half picks byte i / 8 (+ 2 in the upper half) of a splat u32.
static SPREAD_BYTES: [u8; 32] = {
    let mut m = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        m[i] = (i / 8) as u8;
        i += 1;
    }
    m
};

/// View a fixed-size slice of `i8` as bytes (the activation blocks hold `i8`).
#[inline(always)]
pub(crate) fn bytes_of<const N: usize>(x: &[i8; N]) -> &[u8; N] {
    // SAFETY: i8 and u8 have the same size, alignment and valid bit patterns.
    unsafe { &*(x as *const [i8; N] as *const [u8; N]) }
}

/// The `N` elements at `offset` of `s` as an array (bounds-checked; the checks fold away
/// where offsets are constants).
#[inline(always)]
pub(crate) fn arr<T, const N: usize>(s: &[T], offset: usize) -> &[T; N] {
    s[offset..offset + N].try_into().expect("in bounds")
}
