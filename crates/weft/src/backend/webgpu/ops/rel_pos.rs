//! ADD_REL_POS (SAM, f32): add_rel_pos.wgsl, one invocation per element.

use super::{arg, grid_for_elements, is_f32, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(pw), Some(ph)) = (node.src(0), node.src(1), node.src(2)) else {
        return false;
    };
    // Row r of pw and ph holds pw.ne0 values, a's row r pw.ne0^2 (the constructor's shapes).
    matches!(node.op(), Op::AddRelPos { .. })
        && is_f32(Some(node))
        && is_f32(Some(a))
        && is_f32(Some(pw))
        && is_f32(Some(ph))
        && a.same_shape(node)
        && pw.same_shape(ph)
        && pw.ne()[0] * pw.ne()[0] == a.ne()[0]
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key()]
}

fn key() -> PipelineKey {
    PipelineKey::new("add_rel_pos", "main").define("WG_SIZE", WG_ELEMENTWISE)
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let a = arg(ctx, src(node, 0)?, 1)?;
    let pw = arg(ctx, src(node, 1)?, 2)?;
    let ph = arg(ctx, src(node, 2)?, 3)?;
    let d = arg(ctx, node, 4)?;
    let n = d.nelements;
    let params =
        Params::header(&d, &[Some(&a), Some(&pw)], n).u32s(&ph.layout).u32s(&[ph.elem_offset, 0, 0, 0]).finish();
    Ok(Some(Dispatch {
        key: key(),
        params,
        bindings: vec![a.binding, pw.binding, ph.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
