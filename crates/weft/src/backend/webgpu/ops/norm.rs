//! RMS_NORM (f32, any strides): rms_norm.wgsl, one workgroup per row.

use super::{bind_node, grid, is_f32, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    matches!(node.op(), Op::RmsNorm { .. })
        && is_f32(Some(node))
        && node.src(0).is_some_and(|s| is_f32(Some(s)) && s.same_shape(node))
}

fn key() -> PipelineKey {
    PipelineKey::new("rms_norm", "main").define("WG_SIZE", WG_ROWS)
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key()]
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::RmsNorm { eps } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let ([a], d) = bind_node(ctx, node)?;
    let rows = node.nrows() as u32;
    let params = Params::header(&d, &[Some(&a)], rows).f32s(&[eps]).finish();
    Ok(Some(Dispatch { key: key(), params, bindings: vec![a.binding, d.binding], groups: grid(ctx, rows as u64)? }))
}
