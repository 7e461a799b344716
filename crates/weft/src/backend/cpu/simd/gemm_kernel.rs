//! The GEMM micro-kernel: an MR x NR tile of dot products over packed groups of 256
//! elements (layouts in `gemm.rs`). In each group, 4 steps of `dot4` accumulate the 16
//! lanes' integer sums (16 elements each, exact), which are scaled in f32 by the lane's
//! a and b scales and joined by the lane's min term; the 8 f32 lanes of each output are
//! summed once, at the end.

use super::gemm::{Mode, A_REC, B_REC};
use super::ops::{arr, Simd};

/// 32 bytes at `offset` of a record.
#[inline(always)]
fn bytes32(rec: &[u8], offset: usize) -> &[u8; 32] {
    arr(rec, offset)
}

/// The tile `a` (groups x MR rows of packed records) times `b` (NR columns of packed
/// groups), over `groups` groups, into `out[r * NR + c]`. `MIN = false` skips the min term,
/// for tiles whose `ca` are all zero (q8_0 and most I-quants): one fused add in five of the
/// sign-trick kernel's vector ops, where the signed kernels are bound by those ops.
#[inline(always)]
pub(crate) fn micro<S: Simd, const MR: usize, const NR: usize, const MODE: u8, const MIN: bool>(
    s: S,
    a: &[u8],
    b: &[&[u8]],
    groups: usize,
    out: &mut [f32],
) {
    let mut f = [[s.fzero(); NR]; MR];
    for g in 0..groups {
        for (r, fr) in f.iter_mut().enumerate() {
            let ar = &a[(g * MR + r) * A_REC..(g * MR + r + 1) * A_REC];
            // A loop, not `array::from_fn`: a closure would not inherit the entry point's
            // target features, and its intrinsics would be called out of line.
            let mut av = [s.zero(); 8];
            for (k, v) in av.iter_mut().enumerate() {
                *v = s.load(bytes32(ar, 32 * k));
            }
            let sa = [s.fload_bytes(bytes32(ar, 256)), s.fload_bytes(bytes32(ar, 288))];
            let ca =
                if MIN { [s.fload_bytes(bytes32(ar, 320)), s.fload_bytes(bytes32(ar, 352))] } else { [s.fzero(); 2] };
            for (c, frc) in fr.iter_mut().enumerate() {
                let bc = &b[c][g * B_REC..(g + 1) * B_REC];
                let mut acc = [s.zero(), s.zero()];
                for step in 0..4 {
                    for (h, acc_h) in acc.iter_mut().enumerate() {
                        let bv = s.load(bytes32(bc, 64 * step + 32 * h));
                        *acc_h = if MODE == Mode::SIGNED {
                            s.dot4_signed_acc(*acc_h, av[2 * step + h], bv)
                        } else {
                            s.dot4_acc(*acc_h, av[2 * step + h], bv)
                        };
                    }
                }
                for (h, &acc_h) in acc.iter().enumerate() {
                    // Offset levels (a + 128): take 128 * (lane sum of b) back off.
                    let acc_h =
                        if MODE == Mode::OFFSET { s.add_i32(acc_h, s.load(bytes32(bc, 384 + 32 * h))) } else { acc_h };
                    let sb = s.fload_bytes(bytes32(bc, 256 + 32 * h));
                    *frc = s.fmadd(s.cvt_i32(acc_h), s.fmul(sa[h], sb), *frc);
                    if MIN {
                        *frc = s.fmadd(ca[h], s.fload_bytes(bytes32(bc, 320 + 32 * h)), *frc);
                    }
                }
            }
        }
    }
    for (r, fr) in f.iter().enumerate() {
        for (c, &frc) in fr.iter().enumerate() {
            out[r * NR + c] = s.hsum(frc);
        }
    }
}
