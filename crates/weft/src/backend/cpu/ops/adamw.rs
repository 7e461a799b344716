//! OPT_STEP_ADAMW: one AdamW step, in place on the parameter a and the moments m and v
//! (src[2], src[3]), f32:
//!   m = m*beta1 + g*(1 - beta1);   v = v*beta2 + g*g*(1 - beta2)
//!   a = a*(1 - alpha*wd) - (m * alpha/(1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
//! then the iteration t stored in the op params goes up by one, as ggml's kernel does, so
//! the same graph computed again takes the next step. The multiply-adds are fused as ggml's
//! build fuses them (bit-identical to its outputs).

use super::{all_f32, fused, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    node.srcs().len() == 4 && all_f32(node)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let Op::OptStepAdamw { iter, alpha, beta1, beta2, eps, wd } = node.op() else {
        return Ok(());
    };
    let (w, g, m, v) = (src(node, 0)?, src(node, 1)?, src(node, 2)?, src(node, 3)?);
    // The bias corrections, in f32 with powf of the iteration as a float (ggml's formula).
    let beta1h = alpha / (1.0 - beta1.powf(iter as f32));
    let beta2h = 1.0 / (1.0 - beta2.powf(iter as f32));
    let keep = (-alpha).mul_add(wd, 1.0);
    let n0 = w.n(0);
    cx.par_ranges(w.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        fused(|| {
            let (mut wr, mut gr, mut mr, mut vr) = (vec![0f32; n0], vec![0f32; n0], vec![0f32; n0], vec![0f32; n0]);
            for ir in rows {
                let (i1, i2, i3) = w.row_coords(ir);
                // SAFETY: all four tensors have a's shape; this worker owns row ir of a, m, v.
                unsafe {
                    w.load_row(i1, i2, i3, &mut wr);
                    g.load_row(i1, i2, i3, &mut gr);
                    m.load_row(i1, i2, i3, &mut mr);
                    v.load_row(i1, i2, i3, &mut vr);
                    for i in 0..n0 {
                        let gi = gr[i];
                        mr[i] = mr[i].mul_add(beta1, gi * (1.0 - beta1));
                        vr[i] = vr[i].mul_add(beta2, gi * gi * (1.0 - beta2));
                        let mh = mr[i] * beta1h;
                        let vh = (vr[i] * beta2h).sqrt() + eps;
                        // Decoupled weight decay (not an L2 term in the loss).
                        wr[i] = wr[i].mul_add(keep, -(mh / vh));
                    }
                    m.store_row(i1, i2, i3, &mr);
                    v.store_row(i1, i2, i3, &vr);
                    w.store_row(i1, i2, i3, &wr);
                }
            }
        })
    });
    node.set_op(Op::OptStepAdamw { iter: iter + 1, alpha, beta1, beta2, eps, wd })
}
