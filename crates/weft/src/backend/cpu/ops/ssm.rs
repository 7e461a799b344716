//! Mamba's state-space ops, f32:
//! - SSM_CONV: a depthwise causal conv, dst[i, t, s] = sum_k sx[t + k, i, s] * c[k, i];
//! - SSM_SCAN: the selective scan, per channel and sequence the recurrence
//!   state = state * exp(softplus(dt) * A) + B * x * softplus(dt), y = state . C,
//!   with the result holding y followed by the final states.
//!
//! Both sum in f32 in ggml's order (ggml deliberately avoids its f64 dot here); the scan's
//! multiply-adds are fused as ggml's build fuses them (the conv's sum is not), which makes
//! both bit-identical to ggml's reference outputs. Channels (d_inner) are independent, so the
//! work is split over them, as ggml does.

use super::{all_f32, fused, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports: all_f32, run };

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    match node.op() {
        Op::SsmConv => ssm_conv(node, cx),
        Op::SsmScan => ssm_scan(node, cx),
        _ => Ok(()),
    }
}

#[inline]
unsafe fn f(t: &TData, i0: usize, i1: usize, i2: usize) -> f32 {
    (t.at(i0, i1, i2, 0) as *const f32).read_unaligned()
}

fn ssm_conv(node: &Tensor, cx: &Cx) -> Result<()> {
    let sx = src(node, 0)?;
    let c = src(node, 1)?;
    let d = TData::of(node)?;
    let (d_conv, d_inner, n_t, n_s) = (c.n(0), c.n(1), d.n(1), d.n(2));
    cx.par_ranges(d_inner, (1024 / (d_conv * n_t * n_s).max(1)).max(1), |channels| {
        for i1 in channels {
            for i3 in 0..n_s {
                for i2 in 0..n_t {
                    let mut sum = 0f32;
                    // SAFETY: i2 + i0 < n_t + d_conv - 1 = sx.ne[0]; the rest is in shape.
                    unsafe {
                        for i0 in 0..d_conv {
                            sum += f(&sx, i2 + i0, i1, i3) * f(&c, i0, i1, 0);
                        }
                        (d.at(i1, i2, i3, 0) as *mut f32).write_unaligned(sum);
                    }
                }
            }
        }
    });
    Ok(())
}

fn ssm_scan(node: &Tensor, cx: &Cx) -> Result<()> {
    let (s_in, x, dt, a, b, c) =
        (src(node, 0)?, src(node, 1)?, src(node, 2)?, src(node, 3)?, src(node, 4)?, src(node, 5)?);
    let d = TData::of(node)?;
    let (d_state, d_inner, n_t, n_s) = (s_in.n(0), s_in.n(1), x.n(1), s_in.n(2));
    // dst = [y: d_inner x n_t x n_s][states: d_state x d_inner x n_s], packed f32.
    let states_at = x.nelements();
    cx.par_ranges(d_inner, (256 / (d_state * n_t * n_s).max(1)).max(1), |channels| {
        fused(|| {
            let out = d.ptr() as *mut f32;
            let mut state = vec![0f32; d_state];
            for i1 in channels {
                for i3 in 0..n_s {
                    // SAFETY: indices inside each source's shape (checked by the constructor);
                    // this worker alone writes channel i1's y values and states.
                    unsafe {
                        for (i0, st) in state.iter_mut().enumerate() {
                            *st = f(&s_in, i0, i1, i3);
                        }
                        for i2 in 0..n_t {
                            let dt_v = f(&dt, i1, i2, i3);
                            // softplus, linear above 20 (mamba's selective_state_update).
                            let dt_soft_plus = if dt_v <= 20.0 { dt_v.exp().ln_1p() } else { dt_v };
                            let x_dt = f(&x, i1, i2, i3) * dt_soft_plus;
                            let mut sum = 0f32;
                            for (i0, st) in state.iter_mut().enumerate() {
                                *st = st.mul_add((dt_soft_plus * f(&a, i0, i1, 0)).exp(), f(&b, i0, i2, i3) * x_dt);
                                sum = st.mul_add(f(&c, i0, i2, i3), sum);
                            }
                            *out.add((i3 * n_t + i2) * d_inner + i1) = sum;
                        }
                        // With no tokens the state passes through unchanged.
                        let base = states_at + (i3 * d_inner + i1) * d_state;
                        std::ptr::copy_nonoverlapping(state.as_ptr(), out.add(base), d_state);
                    }
                }
            }
        })
    });
    Ok(())
}
