//! OPT_STEP_ADAMW (f32, any layout): opt_step_adamw.wgsl, one invocation per element,
//! writing the parameter (src 0) and the moments (srcs 2 and 3) in place. The bias
//! corrections are worked here as the CPU backend works them, and, as ggml's kernel (and
//! the CPU backend) does, each computation moves the iteration in the op params on by one,
//! so computing the same graph again takes the next step.

use super::{arg, grid_for_elements, is_f32, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    let Some(w) = node.src(0) else { return false };
    matches!(node.op(), Op::OptStepAdamw { .. })
        && node.srcs().len() == 4
        && is_f32(Some(node))
        && (0..4).all(|i| node.src(i).is_some_and(|t| is_f32(Some(t)) && t.same_shape(w)))
}

fn key() -> PipelineKey {
    PipelineKey::new("opt_step_adamw", "main").define("WG_SIZE", WG_ELEMENTWISE)
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::OptStepAdamw { iter, alpha, beta1, beta2, eps, wd } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let [w, g, m, v] = [0, 1, 2, 3].map(|i| src(node, i).and_then(|t| arg(ctx, t, i as u32 + 1)));
    let (w, g, m, v) = (w?, g?, m?, v?);
    // The CPU backend's f32 formulas (ggml's): powf of the iteration as a float.
    let beta1h = alpha / (1.0 - beta1.powf(iter as f32));
    let beta2h = 1.0 / (1.0 - beta2.powf(iter as f32));
    let keep = (-alpha).mul_add(wd, 1.0);
    let n = w.nelements;
    let params = Params::default()
        .u32s(&w.layout)
        .u32s(&g.layout)
        .u32s(&m.layout)
        .u32s(&v.layout)
        .u32s(&[w.elem_offset, g.elem_offset, m.elem_offset, v.elem_offset, n])
        .f32s(&[beta1, beta2, 1.0 - beta1, 1.0 - beta2, beta1h, beta2h, eps, keep])
        .finish();
    let groups = grid_for_elements(ctx, n, WG_ELEMENTWISE)?;
    // The step is planned: the next computation of this node is the next iteration.
    node.set_op(Op::OptStepAdamw { iter: iter + 1, alpha, beta1, beta2, eps, wd })?;
    Ok(Some(Dispatch { key: key(), params, bindings: vec![w.binding, g.binding, m.binding, v.binding], groups }))
}

/// Every variant this module compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key()]
}
