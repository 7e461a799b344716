//! Ops that generate values: ARANGE (no sources) and TIMESTEP_EMBEDDING (sinusoids of the
//! timesteps), with ggml's f32 arithmetic.

use super::gather::rows_per_task;
use super::{is_float, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{ensure, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    match node.op() {
        Op::Arange { .. } => node.ty() == Type::F32,
        _ => node.ty() == Type::F32 && node.src(0).is_some_and(|t| is_float(t.ty())),
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let d = TData::of(node)?;
    match node.op() {
        Op::Arange { start, step, .. } => {
            cx.par_ranges(d.n(0), 4096, |r| {
                for i in r {
                    // SAFETY: i < ne0 of the 1-D dst.
                    unsafe { d.set_f32(i, 0, 0, 0, start + step * i as f32) };
                }
            });
        }
        Op::TimestepEmbedding { dim, max_period } => {
            let t = src(node, 0)?;
            let half = (dim / 2).max(0) as usize;
            let n0 = d.n(0);
            // Re-checked as params can be replaced after construction (set_op).
            ensure!(2 * half <= n0, "timestepEmbedding: dim={dim} does not fit the result's {n0} columns");
            // ggml: freq_j = expf(-logf(max_period) * j / half), left to right in f32.
            let log_period = (max_period as f32).ln();
            let freqs: Vec<f32> = (0..half).map(|j| (-log_period * j as f32 / half as f32).exp()).collect();
            cx.par_ranges(d.n(1), rows_per_task(n0, 4096), |rows| {
                // For an odd dim ggml zeroes column dim and leaves column dim-1 unwritten;
                // every column past the sinusoids is zero here.
                let mut row = vec![0f32; n0];
                for i in rows {
                    // SAFETY: i < ne1 of dst = ne0 of the timesteps.
                    let ts = unsafe { t.get_f32(i, 0, 0, 0) };
                    for (j, &f) in freqs.iter().enumerate() {
                        let arg = ts * f;
                        row[j] = arg.cos();
                        row[j + half] = arg.sin();
                    }
                    // SAFETY: row i of dst.
                    unsafe { d.store_row(i, 0, 0, &row) };
                }
            });
        }
        _ => {}
    }
    Ok(())
}
