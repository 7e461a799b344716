//! SOFT_MAX (f32, optional f32/f16 mask, scale, ALiBi): soft_max.wgsl, one workgroup per
//! row. The ALiBi bases are computed here exactly as the CPU backend does; the shader only
//! raises them to the head's power. SOFT_MAX_BACK (f32): soft_max_back.wgsl, likewise.

use super::{arg, bind_node, grid, indexable, is_f32, src, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::{alibi_bases, Op};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };
pub const BACK: Kernel = Kernel { supports: supports_back, plan: plan_back };

fn supports_back(node: &Tensor) -> bool {
    let like = |t: Option<&Tensor>| t.is_some_and(|t| is_f32(Some(t)) && t.same_shape(node));
    matches!(node.op(), Op::SoftMaxBack) && is_f32(Some(node)) && like(node.src(0)) && like(node.src(1))
}

fn back_key() -> PipelineKey {
    PipelineKey::new("soft_max_back", "main").define("WG_SIZE", WG_ROWS)
}

fn plan_back(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a, b], d) = bind_node(ctx, node)?;
    let rows = node.nrows() as u32;
    let params = Params::header(&d, &[Some(&a), Some(&b)], rows).finish();
    Ok(Some(Dispatch {
        key: back_key(),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid(ctx, rows as u64)?,
    }))
}

fn supports(node: &Tensor) -> bool {
    let mask_ok = node.src(1).is_none_or(|m| matches!(m.ty(), Type::F32 | Type::F16) && indexable(m));
    matches!(node.op(), Op::SoftMax { .. })
        && is_f32(Some(node))
        && node.src(0).is_some_and(|s| is_f32(Some(s)) && s.same_shape(node))
        && mask_ok
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v: Vec<PipelineKey> = [None, Some(Type::F32), Some(Type::F16)].into_iter().map(key).collect();
    v.push(back_key());
    v
}

fn key(mask: Option<Type>) -> PipelineKey {
    let k = PipelineKey::new("soft_max", "main").define("WG_SIZE", WG_ROWS);
    match mask {
        None => k,
        Some(Type::F16) => k.flag("MASK").flag("MASK_F16"),
        Some(_) => k.flag("MASK"),
    }
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::SoftMax { scale, max_bias } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let a = arg(ctx, src(node, 0)?, 1)?;
    let mask = node.src(1).map(|m| arg(ctx, m, 2)).transpose()?;
    let d = arg(ctx, node, 3)?;
    let rows = node.nrows() as u32;
    let (m0, m1, n_head_log2) = alibi_bases(max_bias, node.ne()[2] as u32);
    let params = Params::header(&d, &[Some(&a), mask.as_ref()], rows)
        .f32s(&[scale, max_bias, m0, m1])
        .u32s(&[n_head_log2])
        .finish();
    let mut bindings = vec![a.binding];
    bindings.extend(mask.map(|m| m.binding));
    bindings.push(d.binding);
    Ok(Some(Dispatch { key: key(node.src(1).map(|m| m.ty())), params, bindings, groups: grid(ctx, rows as u64)? }))
}
