//! ggml_graph_reset (gradients to their starting values, optimizer state cleared) and
//! ggml_build_opt_adamw (an AdamW step for every parameter). Reset writes through the
//! backend tensor I/O, so gradients may live in any backend's buffers.

use crate::backend::{tensor_from_f32, tensor_memset, tensor_set};
use crate::context::Context;
use crate::graph::Graph;
use crate::op::Op;
use crate::tensor::{flags, Tensor};
use crate::types::Type;
use crate::{ensure, Error, Result};

/// AdamW hyper-parameters (ggml_opt_step_adamw's arguments). The default is ggml's
/// ggml_opt_get_default_optimizer_params.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamwParams {
    /// Learning rate.
    pub alpha: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    /// Decoupled weight decay, as a fraction of the weight per step (times alpha).
    pub wd: f32,
}

impl Default for AdamwParams {
    fn default() -> Self {
        AdamwParams { alpha: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, wd: 0.0 }
    }
}

impl Context {
    /// ggml_build_opt_adamw: expand `gb` with an OPT_STEP_ADAMW node for every parameter of
    /// `gf`, after build_backward_expand gave them gradients. Computing gb then updates the
    /// parameters in place; graph_reset clears the moments and the step count.
    pub fn build_opt_adamw(&self, gf: &Graph, gb: &mut Graph, p: AdamwParams) -> Result<()> {
        let params: Vec<&Tensor> = gf.nodes().iter().filter(|n| n.has_flag(flags::PARAM)).collect();
        ensure!(!params.is_empty(), "buildOptAdamw: the forward graph has no parameter (setParam)");
        let mut out = gb.clone();
        for param in params {
            let grad = param.grad().ok_or_else(|| {
                Error::invalid(format!(
                    "buildOptAdamw: parameter '{}' has no gradient; call buildBackwardExpand first",
                    param.label()
                ))
            })?;
            let step = self.opt_step_adamw(param, &grad, p.alpha, p.beta1, p.beta2, p.eps, p.wd)?;
            out.build_forward_expand(&step)?;
        }
        *gb = out;
        Ok(())
    }
}

impl Graph {
    /// ggml_graph_reset: the loss's gradient becomes 1, every other node's gradient 0, and
    /// each AdamW step starts over (iteration 1, zero moments). Gradients must be allocated.
    pub fn reset(&self) -> Result<()> {
        ensure!(self.has_grads(), "graphReset: the graph was made without grads (newGraphCustom(size, true))");
        for node in self.nodes() {
            if let Some(grad) = node.grad() {
                if node.has_flag(flags::LOSS) {
                    ensure!(
                        node.ty() == Type::F32 && node.is_scalar() && grad.ty() == Type::F32,
                        "graphReset: loss '{}' must be a scalar f32",
                        node.label()
                    );
                    tensor_set(&grad, &1f32.to_le_bytes(), 0).map_err(|e| e.context("graphReset"))?;
                } else {
                    set_zero(&grad)?;
                }
            }
            if let Op::OptStepAdamw { alpha, beta1, beta2, eps, wd, .. } = node.op() {
                node.set_op(Op::OptStepAdamw { iter: 1, alpha, beta1, beta2, eps, wd })?;
                for i in [2, 3] {
                    if let Some(moment) = node.src(i) {
                        set_zero(moment)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// ggml_set_zero through the backend. A strided view (a gradient can be a view of another
/// one) gets its own elements zeroed, not the bytes between them.
fn set_zero(t: &Tensor) -> Result<()> {
    if t.is_empty() {
        return Ok(());
    }
    let r = if t.is_contiguous() {
        tensor_memset(t, 0, 0, t.nbytes())
    } else {
        tensor_from_f32(t, &vec![0.0; t.nelements() as usize])
    };
    r.map_err(|e| e.context("graphReset"))
}
