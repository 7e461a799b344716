//! CROSS_ENTROPY_LOSS (one workgroup over every row, the row losses added in row order)
//! and CROSS_ENTROPY_LOSS_BACK (one workgroup per row), f32: cross_entropy_loss.wgsl and
//! cross_entropy_loss_back.wgsl.

use super::{arg, bind_node, grid, is_f32, src, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const LOSS: Kernel = Kernel { supports, plan: plan_loss };
pub const BACK: Kernel = Kernel { supports, plan: plan_back };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else { return false };
    let f32s = is_f32(Some(node)) && is_f32(Some(a)) && is_f32(Some(b)) && a.same_shape(b);
    match node.op() {
        Op::CrossEntropyLoss => f32s,
        Op::CrossEntropyLossBack => f32s && a.same_shape(node) && is_f32(node.src(2)),
        _ => false,
    }
}

fn key(shader: &'static str) -> PipelineKey {
    PipelineKey::new(shader, "main").define("WG_SIZE", WG_ROWS)
}

fn plan_loss(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a, b], d) = bind_node(ctx, node)?;
    let rows = src(node, 0)?.nrows() as u32;
    let params = Params::header(&d, &[Some(&a), Some(&b)], rows).finish();
    Ok(Some(Dispatch {
        key: key("cross_entropy_loss"),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: [1, 1, 1],
    }))
}

fn plan_back(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let a = arg(ctx, src(node, 0)?, 1)?;
    let b = arg(ctx, src(node, 1)?, 2)?;
    let c = arg(ctx, src(node, 2)?, 3)?;
    let d = arg(ctx, node, 4)?;
    let rows = node.nrows() as u32;
    let params = Params::header(&d, &[Some(&a), Some(&b)], rows).u32s(&[c.elem_offset]).finish();
    Ok(Some(Dispatch {
        key: key("cross_entropy_loss_back"),
        params,
        bindings: vec![a.binding, b.binding, c.binding, d.binding],
        groups: grid(ctx, rows as u64)?,
    }))
}

/// Every variant this module compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key("cross_entropy_loss"), key("cross_entropy_loss_back")]
}
