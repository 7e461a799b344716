//! ADD, SUB, MUL, DIV (f32) with ggml's broadcasting of b over a: binary.wgsl.

use super::{bind_node, grid_for_elements, is_f32, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    is_f32(node.src(0)) && is_f32(node.src(1)) && is_f32(Some(node))
}

/// The shader function of each op; the others never reach this kernel.
fn op_fn(op: Op) -> &'static str {
    match op {
        Op::Sub => "op_sub",
        Op::Mul => "op_mul",
        Op::Div => "op_div",
        _ => "op_add",
    }
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    [Op::Add, Op::Sub, Op::Mul, Op::Div].into_iter().map(key).collect()
}

fn key(op: Op) -> PipelineKey {
    PipelineKey::new("binary", "main").define("OP", op_fn(op)).define("WG_SIZE", WG_ELEMENTWISE)
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a, b], d) = bind_node(ctx, node)?;
    let n = d.nelements;
    Ok(Some(Dispatch {
        key: key(node.op()),
        params: Params::header(&d, &[Some(&a), Some(&b)], n).finish(),
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
