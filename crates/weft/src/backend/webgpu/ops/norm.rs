//! Row normalizations (f32, any strides), one workgroup per row (per group for
//! GROUP_NORM): RMS_NORM and NORM (norm.wgsl, NORM with CENTER), GROUP_NORM
//! (group_norm.wgsl) and RMS_NORM_BACK (rms_norm_back.wgsl).

use super::{bind_node, grid, is_f32, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };
pub const GROUP_NORM: Kernel = Kernel { supports, plan: plan_group_norm };
pub const RMS_NORM_BACK: Kernel = Kernel { supports: supports_back, plan: plan_rms_norm_back };

fn supports(node: &Tensor) -> bool {
    matches!(node.op(), Op::RmsNorm { .. } | Op::Norm { .. } | Op::GroupNorm { .. })
        && is_f32(Some(node))
        && node.src(0).is_some_and(|s| is_f32(Some(s)) && s.same_shape(node))
}

fn supports_back(node: &Tensor) -> bool {
    matches!(node.op(), Op::RmsNormBack { .. })
        && is_f32(Some(node))
        && node.src(0).is_some_and(|s| is_f32(Some(s)) && s.same_shape(node))
        && node.src(1).is_some_and(|s| is_f32(Some(s)) && s.same_shape(node))
}

fn key_of(shader: &'static str) -> PipelineKey {
    PipelineKey::new(shader, "main").define("WG_SIZE", WG_ROWS)
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key_of("norm"), key_of("norm").flag("CENTER"), key_of("group_norm"), key_of("rms_norm_back")]
}

/// RMS_NORM and NORM: one workgroup per row.
fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let (eps, key) = match node.op() {
        Op::RmsNorm { eps } => (eps, key_of("norm")),
        Op::Norm { eps } => (eps, key_of("norm").flag("CENTER")),
        _ => return Err(crate::backend::unsupported("WebGPU", node)),
    };
    let ([a], d) = bind_node(ctx, node)?;
    let rows = node.nrows() as u32;
    let params = Params::header(&d, &[Some(&a)], rows).f32s(&[eps]).finish();
    Ok(Some(Dispatch { key, params, bindings: vec![a.binding, d.binding], groups: grid(ctx, rows as u64)? }))
}

fn plan_group_norm(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::GroupNorm { n_groups, eps } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let ([a], d) = bind_node(ctx, node)?;
    let ne = node.ne();
    // ggml: ceil(channels / groups) channels per group.
    let n_groups = n_groups.max(1) as u32;
    let per_group = (ne[2] as u32).div_ceil(n_groups);
    let tasks = ne[3] as u64 * n_groups as u64;
    let tasks_u32 = u32::try_from(tasks)
        .map_err(|_| crate::Error::unsupported(format!("WebGPU: group_norm of {tasks} groups is too many")))?;
    let params = Params::header(&d, &[Some(&a)], tasks_u32).u32s(&[n_groups, per_group]).f32s(&[eps]).finish();
    Ok(Some(Dispatch {
        key: key_of("group_norm"),
        params,
        bindings: vec![a.binding, d.binding],
        groups: grid(ctx, tasks)?,
    }))
}

fn plan_rms_norm_back(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::RmsNormBack { eps } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let ([a, b], d) = bind_node(ctx, node)?;
    let rows = node.nrows() as u32;
    let params = Params::header(&d, &[Some(&a), Some(&b)], rows).f32s(&[eps]).finish();
    Ok(Some(Dispatch {
        key: key_of("rms_norm_back"),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid(ctx, rows as u64)?,
    }))
}
