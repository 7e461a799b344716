//! Kernels for x86 CPUs with AVX-512 (F/BW/VL), VNNI and GFNI (Ice Lake and later, Zen 4),
//! written with those instructions directly rather than once against [`super::ops::Simd`]:
//! GFNI's `vgf2p8affineqb` multiplies each byte by a bit matrix, which takes a 2-bit level out
//! of a packed byte (or a nibble: iq4_xs) in one op where a shift and a mask were two, and
//! q3_K and iq4_xs gain further from 512-bit registers; with VBMI's byte permutes, iq2_xxs's
//! grid rows come out of registers instead of memory, and the other grid I-quants, which
//! gather their rows ([`gather_available`]), take every per-row and per-group field out of a
//! block by byte ops (`gridrows`). `table::native` puts them in place of the table's kernels
//! where [`available`]. Every i32 lane and float step is the shared kernels'
//! (ggml's), so the results are the same bits (tested against the table's kernels).

use std::arch::x86_64::*;

/// A `[[T; N]; M]` constant whose element `[i][j]` is `$f` (an expression of `i` and `j`), or
/// a `[T; N]` one whose element `[j]` is `$f` of `j`: the loops a const table takes, written
/// once.
macro_rules! table2d {
    ([$t:ty; $n:expr], |$j:ident| $f:expr) => {
        table2d!([[$t; $n]; 1], |_row, $j| $f)[0]
    };
    ([[$t:ty; $n:expr]; $m:expr], |$i:ident, $j:ident| $f:expr) => {{
        let mut t = [[0 as $t; $n]; $m];
        let mut $i = 0;
        while $i < $m {
            let mut $j = 0;
            while $j < $n {
                t[$i][$j] = $f;
                $j += 1;
            }
            $i += 1;
        }
        t
    }};
}

/// The block loop of the 512-bit kernels whose blocks start with their f16 `d` and whose
/// float steps are ggml's one `d * sum + acc` a block: `$body` makes a block's i32 sums in a
/// zmm (two of ggml's 256-bit groups, [`gridrows::fold`]ed to its eight lanes), the row's
/// next blocks are prefetched; the float sum of the row (before the type's constant factor).
macro_rules! zmm_blocks {
    ($s:expr, $x:expr, $y:expr, |$bx:ident, $by:ident| $body:expr) => {{
        let s = $s;
        let x = &$x[..$y.len()];
        let mut accum = s.fzero();
        for (i, ($bx, $by)) in x.iter().zip($y).enumerate() {
            super::super::prefetch::row_block::<Avx512, _, 1>(s, x, i);
            let sumi: __m512i = $body;
            let d = s.f16($bx.d.bits()) * $by.d.get();
            accum = s.fmadd(s.fsplat(d), s.cvt_i32(super::gridrows::fold(sumi)), accum);
        }
        s.hsum(accum)
    }};
}

/// A kernel module's table entries over its `rows::<R>(x: [&[$block]; R], y: &[BlockQ8K])`:
/// `dot` ([`super::table::DotFn`]), `dot2` and `dot4` ([`super::table::DotRowsFn`]).
macro_rules! row_entries {
    ($block:ty) => {
        /// One row ([`super::super::table::DotFn`]).
        ///
        /// # Safety
        /// [`super::available`]; `x` and `y` whole blocks of the type and q8_K, as many of each.
        pub(crate) unsafe fn dot(x: &[u8], y: &[u8]) -> f32 {
            rows::<1>([bytemuck::cast_slice::<u8, $block>(x)], bytemuck::cast_slice(y))[0]
        }

        /// Two rows ([`super::super::table::DotRowsFn`]).
        ///
        /// # Safety
        /// As [`dot`], for each row.
        pub(crate) unsafe fn dot2(x: [&[u8]; 2], y: &[u8]) -> [f32; 2] {
            rows::<2>(x.map(bytemuck::cast_slice::<u8, $block>), bytemuck::cast_slice(y))
        }

        /// Four rows ([`super::super::table::DotRowsFn`]).
        ///
        /// # Safety
        /// As [`dot`], for each row.
        pub(crate) unsafe fn dot4(x: [&[u8]; 4], y: &[u8]) -> [f32; 4] {
            rows::<4>(x.map(bytemuck::cast_slice::<u8, $block>), bytemuck::cast_slice(y))
        }
    };
}

/// Declares `unsafe fn $name($a, $b) -> __m512i`: the op of `$template` (operands `{out}`,
/// `{k}`, `{$a}`, `{$b}`) zero-masked to the even bytes, 0 in the odd: i16 lanes. In asm
/// because LLVM splits a zero-masked byte op into the op and an AND (two uops).
macro_rules! even_bytes_op {
    ($(#[$doc:meta])* $name:ident($a:ident, $b:ident), $features:literal, $template:literal) => {
        $(#[$doc])*
        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn $name($a: __m512i, $b: __m512i) -> __m512i {
            let out: __m512i;
            std::arch::asm!(
                $template,
                out = out(zmm_reg) out,
                k = in(kreg) 0x5555_5555_5555_5555u64,
                $a = in(zmm_reg) $a,
                $b = in(zmm_reg) $b,
                options(pure, nomem, nostack),
            );
            out
        }
    };
}

mod gridrows;
pub(super) mod iq1;
pub(super) mod iq2;
pub(super) mod iq2xxs;
pub(super) mod iq3;
pub(super) mod iq4xs;
pub(super) mod k45;
pub(super) mod q2k;
pub(super) mod q3k;
pub(super) mod q6k;
mod rowpairs;

/// Whether this CPU runs these kernels: AVX-512 with VNNI (`Isa::Avx512Vnni`), GFNI and
/// BMI2 (every CPU with the first two has it).
pub(crate) fn available() -> bool {
    super::Isa::Avx512Vnni.available() && is_x86_feature_detected!("gfni") && is_x86_feature_detected!("bmi2")
}

/// [`available`] and AVX-512 VBMI's byte permutes (`vpermb`, `vpermi2b`, `vpmultishiftqb`),
/// which `iq2xxs` looks its grid codes up with.
pub(crate) fn vbmi_available() -> bool {
    available() && is_x86_feature_detected!("avx512vbmi")
}

/// [`vbmi_available`], and the kernel reports the CPU not affected by Gather Data Sampling
/// (Linux's `/sys/devices/system/cpu/vulnerabilities/gather_data_sampling`: "Not affected"):
/// the kernels that gather their grid rows (`iq1`, `iq2`, `iq3`) run only there. On the Intel
/// CPUs with AVX-512 that the flaw's microcode fix covers (Skylake-SP to Ice Lake, Tiger Lake)
/// the fix makes every gather several times slower, and where the file cannot be read
/// (another OS) those CPUs cannot be told apart, so the table's lookups stay. AMD's Zen 4 and
/// 5 report not affected: not measured there.
pub(crate) fn gather_available() -> bool {
    static FAST: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    vbmi_available()
        && *FAST.get_or_init(|| {
            std::fs::read_to_string("/sys/devices/system/cpu/vulnerabilities/gather_data_sampling")
                .is_ok_and(|s| s.trim() == "Not affected")
        })
}

/// The bit matrix (a qword of `vgf2p8affineqb`) that takes bits `2k` and `2k + 1` of a byte
/// to bits 0 and 1 and clears the rest: output bit `i` is the parity of the input byte and
/// the matrix's byte `7 - i`.
const fn level_bits(k: usize) -> u64 {
    (1u64 << (2 * k)) << 56 | (1u64 << (2 * k + 1)) << 48
}

/// The bit matrices (one a qword) that take a byte's low nibble (qwords 0-3: a zmm's
/// 128-bit lanes 0 and 1) or its high nibble (qwords 4-7) to bits 0-3 and clear bits 4-7:
/// output bit `i` is the parity of the input byte and the matrix's byte `7 - i`.
const NIBBLE_BITS: [u64; 8] = {
    let mut t = [0u64; 8];
    let mut w = 0;
    while w < 8 {
        let shift = if w < 4 { 0 } else { 4 };
        let mut i = 0;
        while i < 4 {
            t[w] |= (1u64 << (i + shift)) << (8 * (7 - i));
            i += 1;
        }
        w += 1;
    }
    t
};

/// 64 bytes of a constant table as a zmm (the token proves AVX-512).
#[inline(always)]
fn load64<T>(_: super::x86::Avx512, t: &T) -> __m512i {
    const { assert!(std::mem::size_of::<T>() == 64) };
    // SAFETY: 64 readable bytes; the token proves the CPU runs AVX-512 F.
    unsafe { _mm512_loadu_si512(t as *const T as *const _) }
}

/// The 64 activations at `y` negated where `k` has a bit set (wrapping at -128 as `vpsignb`
/// does): a load and one masked subtraction. In asm because where two masks negate the same
/// bytes LLVM makes one negation and a blend for each (three uops where two will do).
///
/// # Safety
/// AVX-512 BW; 64 readable bytes at `y`.
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn neg_where_loaded(y: *const i8, k: u64, zero: __m512i) -> __m512i {
    let out: __m512i;
    std::arch::asm!(
        "vmovdqu64 {out}, zmmword ptr [{y}]",
        "vpsubb {out} {{{k}}}, {zero}, {out}",
        out = out(zmm_reg) out,
        y = in(reg) y,
        k = in(kreg) k,
        zero = in(zmm_reg) zero,
        options(pure, readonly, nostack),
    );
    out
}

/// `acc += a * b` by `vpdpwssd` (i16 pairs). In asm because LLVM splits it into `vpmaddwd`
/// and `vpaddd`.
///
/// # Safety
/// AVX-512 F and VNNI.
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
unsafe fn dpwssd(acc: &mut __m512i, a: __m512i, b: __m512i) {
    std::arch::asm!(
        "vpdpwssd {acc}, {a}, {b}",
        acc = inout(zmm_reg) *acc,
        a = in(zmm_reg) a,
        b = in(zmm_reg) b,
        options(pure, nomem, nostack),
    );
}

/// The affine op's operand that makes sign masks of 7-bit sign fields (iq2_xxs, iq2_xs,
/// iq3_xxs): with a row's field in each byte of its qword as the matrix, byte j < 7 (operand
/// `1 << j`) comes out 0xff where field bit j is set, and byte 7 (operand `0x7f`, all seven)
/// where the field's parity is odd: ggml's implied eighth sign. Shifted left by n where the
/// field sits n bits up its bytes.
const SIGN_PICK: u64 = 0x7f40_2010_0804_0201;

/// The sign mask of eight rows whose 7-bit fields are in `fields` (each in every byte of its
/// row's qword, `pick` [`SIGN_PICK`] shifted to them): bit `8r + j` set where row r's weight j
/// is negative.
///
/// # Safety
/// AVX-512 BW and GFNI.
#[inline(always)]
unsafe fn field_signs(fields: __m512i, pick: __m512i) -> u64 {
    _mm512_movepi8_mask(_mm512_gf2p8affine_epi64_epi8::<0>(pick, fields))
}

/// One zmm of the iq2 and iq3 kernels: `sumi += scales * (levels * y)` in i32 lanes, `y` the 64
/// activations at `q8` negated where `signs` has a bit set, by `vpmaddubsw` (the levels are
/// unsigned) and `vpdpwssd` (`scales` in i16 lanes).
///
/// # Safety
/// AVX-512 BW and VNNI; 64 readable bytes at `q8`.
#[inline(always)]
unsafe fn signed_levels(sumi: &mut __m512i, levels: __m512i, q8: *const i8, signs: u64, scales: __m512i) {
    let ys = neg_where_loaded(q8, signs, _mm512_setzero_si512());
    dpwssd(sumi, _mm512_maddubs_epi16(levels, ys), scales);
}
