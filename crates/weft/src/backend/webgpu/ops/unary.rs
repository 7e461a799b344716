//! SCALE (f32, any strides): unary.wgsl.

use super::{bind_node, grid_for_elements, is_f32, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    matches!(node.op(), Op::Scale { .. })
        && is_f32(Some(node))
        && node.src(0).is_some_and(|s| is_f32(Some(s)) && s.same_shape(node))
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key("op_scale")]
}

fn key(op_fn: &'static str) -> PipelineKey {
    PipelineKey::new("unary", "main").define("OP", op_fn).define("WG_SIZE", WG_ELEMENTWISE)
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    // The shader function and its scalar parameters.
    let (op_fn, f) = match node.op() {
        Op::Scale { s } => ("op_scale", [s, 0.0, 0.0, 0.0]),
        _ => return Err(crate::backend::unsupported("WebGPU", node)),
    };
    let ([a], d) = bind_node(ctx, node)?;
    let n = d.nelements;
    let params = Params::header(&d, &[Some(&a)], n).f32s(&f).finish();
    Ok(Some(Dispatch {
        key: key(op_fn),
        params,
        bindings: vec![a.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
