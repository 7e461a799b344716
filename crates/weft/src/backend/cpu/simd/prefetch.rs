//! Software prefetch of the weights a row dot is about to read.
//!
//! Why: at n = 1 every weight byte is read once, straight from DRAM. The cores' own stream
//! prefetchers, measured on this project's Zen 4 VM, do not run far enough ahead of these
//! kernels: q4_K's loads of a stalled until a `prefetcht0` a few KiB ahead of each block
//! was added. MUL_MAT q4_K 4096x14336 n=1, builds alternating in one process, best us:
//! none 1281 / 1378, 1152 B ahead 1131 / 1162, 2304 B 995 / 980, 4608 B 899 / 888,
//! 9216 B 1324 / 1005 (ggml: 1105 in the same session). With the request in every kernel
//! 4096 B ahead, old build against new, both orders: q8_0 2029 / 2023 -> 1598 / 1557,
//! q6_K 1960 / 1626 -> 1188 / 1115, q5_0 1856 / 1935 -> 1531 / 1556, q3_K 1173 / 1226 ->
//! 983 / 983, iq4_nl 1405 / 1372 -> 1177 / 1171, q4_0 1570 / 1566 -> 1455 / 1445; the
//! grid-lookup I-quants (iq2_xs, iq3_xxs), bound by their own instructions, unchanged.
//! 2048 B ahead was slower for q8_0, q4_K and q6_K; 8192 B slower for q6_K and iq4_nl.
//!
//! The request goes to L2 (`prefetcht1`), not L1: a line asked into L1 holds one of the few
//! L1 miss buffers until it arrives, which capped the requests in flight; the L1 miss the
//! load then takes hits L2, which the core hides. With that, the distance is 8 KiB of
//! weights per kernel, split over the rows it reads at once (q4_0's four rows: 2 KiB each;
//! q3_K's pair asks from 16 KiB, `row_block_far`).
//! Alternating calls, 4096x14336 n=1, 2 threads, best us, t0 at 4 KiB against t1 at 4 KiB:
//! q4_0 1222 / 1255 -> 1135 / 1089, q8_0 1750 / 1892 -> 1697 / 1786, q4_K 976 / 1024 ->
//! 944 / 937, q6_K 1372 / 1555 -> 1261 / 1455; t1 at 4 KiB against 8 KiB: q8_0 1636 / 1518
//! -> 1476 / 1191, q4_K 911 / 944 -> 879 / 869, q6_K 1310 / 1271 -> 1144 / 1143, but q4_0
//! (four rows) 1110 / 1101 -> 1181 / 1162; its four rows at 2 KiB each against 4 KiB: 1040
//! / 1069 / 1055 against 1077 / 1141 / 1085. 16 KiB measured level with 8 KiB.
//! A kernel of several rows sends a row's requests past its end to the row it reads next
//! (`row_block`), not into the next row of its own group: q4_0, q4_1, q5_0 four rows, best
//! us, both orders: 1078 / 1037 -> 842 / 818, 1219 / 1186 -> 915 / 911, 1275 / 1277 -> 1052
//! / 1048 (AVX2 q4_0 1174 / 1213 -> 953 / 956).
//! NEON keeps the trait's no-op (not measured on an ARM machine).
//!
//! A prefetch is a hint: an address past the row (the next row, or past the buffer) never
//! faults, so the kernels issue it unconditionally.

use super::ops::Simd;

/// How many bytes of weights ahead of the block being read a kernel asks for, spread over
/// the rows it reads at once (each of `R` rows asks `AHEAD / R` bytes ahead of itself).
const AHEAD: usize = 8192;

/// Ask for the cache lines of `size` bytes at `p` (one request per 64 bytes; fewer than a
/// line ask for one).
#[inline(always)]
fn lines<S: Simd>(s: S, p: *const u8, size: usize) {
    let mut off = 0;
    while off < size {
        s.prefetch(p.wrapping_add(off));
        off += 64;
    }
}

/// Ask for the `size_of::<B>()` bytes `AHEAD` bytes past `block`, a block of the one row a
/// kernel reads (past the row's end that is the next row, which it reads next).
#[inline(always)]
pub(super) fn block<S: Simd, B>(s: S, block: &B) {
    lines(s, (block as *const B as *const u8).wrapping_add(AHEAD), std::mem::size_of::<B>());
}

/// [`block`] for block `i` of `row`, one of the `R` rows a kernel reads at once, `AHEAD / R`
/// bytes ahead: past the row's end, the request goes `R - 1` rows further on, to the row this
/// one's place takes in the next group of `R` (MUL_MAT reads a chunk's rows in groups of `R`,
/// one after another, and a contiguous a holds them back to back). Without the skip, the last
/// `AHEAD / R` bytes of each row asked for the start of the next row, which the kernel was
/// reading already, and the next group's rows started unrequested.
#[inline(always)]
pub(super) fn row_block<S: Simd, B, const R: usize>(s: S, row: &[B], i: usize) {
    rows_ahead::<S, B, R>(s, row, i, AHEAD);
}

/// [`row_block`] from twice as far ahead: q3_K's two rows (about 19 cycles a row and
/// super-block from L1, more time per byte than the legacy types' rows) gained there, best
/// us alternating, both orders: 953 / 932 / 936 -> 903 / 890 / 909. The other several-row
/// kernels measured level (AVX-512: q4_0 840 / 815 -> 823 / 824, q5_1 1155 / 1148 -> 1165 /
/// 1162, iq4_nl 1079 / 1011 -> 1026 / 1014) or slower (AVX2 q8_0's pair 1414 / 1475 -> 1557 /
/// 1536) and keep [`row_block`].
#[inline(always)]
pub(super) fn row_block_far<S: Simd, B, const R: usize>(s: S, row: &[B], i: usize) {
    rows_ahead::<S, B, R>(s, row, i, 2 * AHEAD);
}

#[inline(always)]
fn rows_ahead<S: Simd, B, const R: usize>(s: S, row: &[B], i: usize, ahead: usize) {
    let size = std::mem::size_of::<B>();
    let (len, off) = (std::mem::size_of_val(row), i * size + ahead / R);
    let skip = if off >= len { (R - 1) * len } else { 0 };
    lines(s, (row.as_ptr() as *const u8).wrapping_add(off + skip), size);
}

/// `x.iter()` that asks for the weights `AHEAD` bytes on as it hands out each block (an
/// iterator, not `inspect` with a closure: see `ops.rs` on closures in kernels).
pub(super) struct Ahead<'a, S, B> {
    s: S,
    it: std::slice::Iter<'a, B>,
}

#[inline(always)]
pub(super) fn ahead<S: Simd, B>(s: S, x: &[B]) -> Ahead<'_, S, B> {
    Ahead { s, it: x.iter() }
}

impl<'a, S: Simd, B> Iterator for Ahead<'a, S, B> {
    type Item = &'a B;
    #[inline(always)]
    fn next(&mut self) -> Option<&'a B> {
        let b = self.it.next()?;
        block(self.s, b);
        Some(b)
    }
    #[inline(always)]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.it.size_hint()
    }
}
