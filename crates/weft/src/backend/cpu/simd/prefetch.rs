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
//! NEON keeps the trait's no-op (not measured on an ARM machine).
//!
//! A prefetch is a hint: an address past the row (the next row, or past the buffer) never
//! faults, so the kernels issue it unconditionally.

use super::ops::Simd;

/// How far ahead of the block being read its kernel asks for the weights.
const AHEAD: usize = 4096;

/// Ask for the cache lines of the `size_of::<B>()` bytes `AHEAD` bytes past `block` (one
/// request per 64 bytes; blocks smaller than a line ask for one).
#[inline(always)]
pub(super) fn block<S: Simd, B>(s: S, block: &B) {
    let p = (block as *const B as *const u8).wrapping_add(AHEAD);
    let mut off = 0;
    while off < std::mem::size_of::<B>() {
        s.prefetch(p.wrapping_add(off));
        off += 64;
    }
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
