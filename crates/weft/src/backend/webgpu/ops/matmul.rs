//! MUL_MAT (f32 a and b, any strides, a broadcast over b's dims 2 and 3): mul_mat.wgsl.

use super::{bind_node, grid_for_elements, is_f32, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    is_f32(node.src(0)) && is_f32(node.src(1)) && is_f32(Some(node))
}

fn key() -> PipelineKey {
    PipelineKey::new("mul_mat", "main").define("WG_SIZE", WG_ELEMENTWISE)
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key()]
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a, b], d) = bind_node(ctx, node)?;
    let (na, nb) = (src(node, 0)?.ne(), src(node, 1)?.ne());
    // The constructor checked a.ne[2] and a.ne[3] divide b's; max(1) keeps a bad graph
    // from dividing by zero here.
    let (r2, r3) = ((nb[2] / na[2].max(1)) as u32, (nb[3] / na[3].max(1)) as u32);
    let n = d.nelements;
    let params = Params::header(&d, &[Some(&a), Some(&b)], n).u32s(&[na[0] as u32, r2.max(1), r3.max(1), 0]).finish();
    Ok(Some(Dispatch {
        key: key(),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
