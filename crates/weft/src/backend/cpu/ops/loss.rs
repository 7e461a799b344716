//! CROSS_ENTROPY_LOSS and CROSS_ENTROPY_LOSS_BACK, f32, over rows of logits a and target
//! probabilities b:
//!   loss    = -(1/rows) * sum_rows sum_i b_i * log_softmax(a)_i
//!   grad_a  = (softmax(a) - b) * c / rows          (c = the loss's gradient, a scalar)
//!
//! Row sums and the softmax denominators accumulate in f64 and round to f32 as ggml's
//! ggml_vec_sum_f32 / ggml_vec_(log_)soft_max_f32 do. ggml then adds the f32 row losses in
//! f32 on each thread and the thread totals in f64; here the row losses are added in row
//! order, which is ggml's order on one thread, so the result does not depend on the pool.

use super::softmax::softmax_row;
use super::{all_f32, for_rows2, map_rows2, src, SyncPtr};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports: all_f32, run };

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    match node.op() {
        Op::CrossEntropyLoss => loss(node, cx),
        Op::CrossEntropyLossBack => loss_back(node, cx),
        _ => Ok(()),
    }
}

/// C's MAX over a row, as ggml_vec_max_f32 takes it.
fn row_max(x: &[f32]) -> f32 {
    x.iter().fold(f32::NEG_INFINITY, |m, &v| if m > v { m } else { v })
}

/// sum_i b_i * log_softmax(a)_i for one row, in ggml's steps.
fn row_loss(a: &[f32], b: &[f32], st: &mut [f32]) -> f32 {
    let max = row_max(a);
    // ggml_vec_log_soft_max_f32: st = a - max; log of the f64 sum of exp(st), taken in f32.
    let mut sum = 0f64;
    for (s, &x) in st.iter_mut().zip(a) {
        *s = x - max;
        sum += s.exp() as f64;
    }
    let log_sum = (sum as f32).ln();
    let mut total = 0f64;
    for (s, &y) in st.iter_mut().zip(b) {
        *s = (*s + -log_sum) * y;
        total += *s as f64;
    }
    total as f32
}

fn loss(node: &Tensor, cx: &Cx) -> Result<()> {
    let (a, b) = (src(node, 0)?, src(node, 1)?);
    let d = TData::of(node)?;
    let nr = a.nrows();
    let mut per_row = vec![0f32; nr];
    let out = SyncPtr(per_row.as_mut_ptr());
    for_rows2(&a, &b, cx, |ir, x, y, st| {
        // SAFETY: slot ir of per_row is this worker's.
        unsafe { *out.get().add(ir) = row_loss(x, y, st) };
    });
    let total = per_row.iter().fold(0f32, |acc, &v| acc + v);
    // SAFETY: dst is a scalar.
    unsafe { d.set_f32(0, 0, 0, 0, total * (-1.0 / nr as f32)) };
    Ok(())
}

fn loss_back(node: &Tensor, cx: &Cx) -> Result<()> {
    let c = src(node, 2)?;
    let nr = src(node, 0)?.nrows();
    // SAFETY: c is a scalar.
    let d_by_nr = unsafe { c.get_f32(0, 0, 0, 0) } / nr as f32;
    map_rows2(node, cx, |x, target, grad| {
        grad.copy_from_slice(x);
        softmax_row(grad);
        grad.iter_mut().zip(target).for_each(|(g, &t)| *g = (*g - t) * d_by_nr);
    })
}
