//! Ops that answer with indices or counts: ARGMAX (i32 per row), COUNT_EQUAL (i64 scalar)
//! and ARGSORT (i32 permutation per row).

use std::sync::atomic::{AtomicI64, Ordering};

use super::gather::rows_per_task;
use super::{is_float, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::{Op, SortOrder};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let Some(a) = node.src(0) else { return false };
    match node.op() {
        // ggml reads f32; f16 and bf16 widen exactly, so comparisons are the same.
        Op::Argmax | Op::Argsort { .. } => is_float(a.ty()) && node.ty() == Type::I32,
        Op::CountEqual => {
            a.ty() == Type::I32 && node.src(1).is_some_and(|b| b.ty() == Type::I32) && node.ty() == Type::I64
        }
        _ => false,
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let d = TData::of(node)?;
    match node.op() {
        Op::Argmax => argmax(cx, &a, &d),
        Op::CountEqual => count_equal(cx, &a, &src(node, 1)?, &d),
        Op::Argsort { order } => argsort(cx, &a, &d, order),
        _ => {}
    }
    Ok(())
}

/// ggml_vec_argmax_f32: max = MAX(max, x) (C's `a > b ? a : b`, so a NaN max is replaced by
/// the next element), and the index moves to every i where x[i] equals the running max, so
/// ties give the last index.
pub fn argmax_row(x: &[f32]) -> usize {
    let mut max = f32::NEG_INFINITY;
    let mut idx = 0;
    for (i, &v) in x.iter().enumerate() {
        max = if max > v { max } else { v };
        if max == v {
            idx = i;
        }
    }
    idx
}

fn argmax(cx: &Cx, a: &TData, d: &TData) {
    let n0 = a.n(0);
    cx.par_ranges(a.n(1), rows_per_task(n0, 8192), |rows| {
        let mut x = vec![0f32; n0];
        for i1 in rows {
            // SAFETY: a is a matrix (constructor) and dst has a.ne[1] elements.
            unsafe {
                a.load_row(i1, 0, 0, &mut x);
                (d.at(i1, 0, 0, 0) as *mut i32).write_unaligned(argmax_row(&x) as i32);
            }
        }
    });
}

/// Counts over every element of the (same-shaped) inputs. ggml's kernel splits the row
/// index into (i01, i02, i03) with a slip (it subtracts i03*ne03, not i03*ne02*ne01), which
/// only gives the right rows for inputs with one row per slice and one slice, as in the
/// suite (argmax outputs); here every row is counted once, whatever the shape.
fn count_equal(cx: &Cx, a: &TData, b: &TData, d: &TData) {
    // Integer partial sums: the total does not depend on how rows are split.
    let total = AtomicI64::new(0);
    let n0 = a.n(0);
    cx.par_ranges(a.nrows(), rows_per_task(n0, 16384), |rows| {
        let mut count = 0i64;
        for ir in rows {
            let (i1, i2, i3) = a.row_coords(ir);
            for i0 in 0..n0 {
                // SAFETY: a and b have the same shape (constructor).
                let (x, y) = unsafe {
                    (
                        (a.at(i0, i1, i2, i3) as *const i32).read_unaligned(),
                        (b.at(i0, i1, i2, i3) as *const i32).read_unaligned(),
                    )
                };
                count += (x == y) as i64;
            }
        }
        total.fetch_add(count, Ordering::Relaxed);
    });
    // SAFETY: dst is an i64 scalar.
    unsafe { (d.ptr() as *mut i64).write_unaligned(total.into_inner()) };
}

fn argsort(cx: &Cx, a: &TData, d: &TData, order: SortOrder) {
    let n0 = a.n(0);
    let desc = order == SortOrder::Desc;
    cx.par_ranges(a.nrows(), rows_per_task(n0 * 8, 8192), |rows| {
        let mut x = vec![0f32; n0];
        let mut perm = vec![0usize; n0];
        for ir in rows {
            let (i1, i2, i3) = a.row_coords(ir);
            // SAFETY: dst has a's shape; rows are this task's own.
            unsafe {
                a.load_row(i1, i2, i3, &mut x);
                argsort_row(&x, desc, &mut perm);
                for (i0, &p) in perm.iter().enumerate() {
                    (d.at(i0, i1, i2, i3) as *mut i32).write_unaligned(p as i32);
                }
            }
        }
    });
}

/// The permutation ggml's argsort produces. ggml runs an exchange sort (for each j, swap
/// with every later k that compares strictly out of order), which is not stable: the order
/// it leaves among equal values depends on the whole row. When the row has no NaN and no
/// two equal values the sorted order is unique, so any sort gives ggml's answer; otherwise
/// ggml's exchange sort is replayed step for step (O(n^2), as ggml always is).
pub fn argsort_row(x: &[f32], desc: bool, perm: &mut [usize]) {
    perm.iter_mut().enumerate().for_each(|(i, p)| *p = i);
    if !x.iter().any(|v| v.is_nan()) {
        perm.sort_unstable_by(|&i, &j| {
            let o = x[i].partial_cmp(&x[j]).unwrap_or(std::cmp::Ordering::Equal);
            if desc {
                o.reverse()
            } else {
                o
            }
        });
        if perm.windows(2).all(|w| x[w[0]] != x[w[1]]) {
            return;
        }
        perm.iter_mut().enumerate().for_each(|(i, p)| *p = i);
    }
    let n = x.len();
    for j in 0..n {
        for k in j + 1..n {
            let (u, v) = (x[perm[j]], x[perm[k]]);
            if (!desc && u > v) || (desc && u < v) {
                perm.swap(j, k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ggml's exchange sort, run directly, as the truth for the fast path.
    fn exchange(x: &[f32], desc: bool) -> Vec<usize> {
        let mut p: Vec<usize> = (0..x.len()).collect();
        for j in 0..x.len() {
            for k in j + 1..x.len() {
                if (!desc && x[p[j]] > x[p[k]]) || (desc && x[p[j]] < x[p[k]]) {
                    p.swap(j, k);
                }
            }
        }
        p
    }

    #[test]
    fn argsort_matches_ggml_with_and_without_ties() {
        let rows: [&[f32]; 5] = [
            &[3.0, 1.0, 2.0, 0.5, -1.0],
            &[1.0, 2.0, 1.0, 0.0, 2.0, 1.0],
            &[0.0, -0.0, 0.0, -1.0],
            &[f32::NAN, 1.0, 0.0, f32::NAN, -2.0],
            &[5.0; 7],
        ];
        for x in rows {
            for desc in [false, true] {
                let mut p = vec![0; x.len()];
                argsort_row(x, desc, &mut p);
                assert_eq!(p, exchange(x, desc), "{x:?} desc={desc}");
            }
        }
        // Ties by hand: [1, 2, 1, 0, 2, 1] ascending. Pass 0 takes records 1 (pos 0) then
        // 0 (pos 3): [3, 1, 2, 0, 4, 5]; pass 1 from 2 (idx 1): records idx 2 (value 1) ->
        // [3, 2, 1, 0, 4, 5]; pass 2 from idx 1 (value 2): record idx 0 (value 1) at pos 3
        // -> [3, 2, 0, 1, 4, 5]; pass 3 from idx 1 (2): record idx 5 (1) -> [3, 2, 0, 5, 4, 1];
        // pass 4 from idx 4 (2): idx 1 (2) is not smaller -> unchanged.
        let mut p = vec![0; 6];
        argsort_row(&[1.0, 2.0, 1.0, 0.0, 2.0, 1.0], false, &mut p);
        assert_eq!(p, vec![3, 2, 0, 5, 4, 1]);
    }

    #[test]
    fn argmax_takes_the_last_of_equal_maxima_and_skips_nan() {
        assert_eq!(argmax_row(&[1.0, 3.0, 2.0, 3.0, 0.0]), 3);
        assert_eq!(argmax_row(&[f32::NAN, 1.0, 0.5]), 1);
        assert_eq!(argmax_row(&[f32::NEG_INFINITY, f32::NEG_INFINITY]), 1);
    }
}
