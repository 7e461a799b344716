//! MUL_MAT_ID (expert-routed product): mul_mat_id.wgsl, one workgroup per (block of expert
//! rows, slot, token), one output per invocation. Experts in f32, f16, bf16 or any block
//! type of dequant.wgsl; b f32; ids i32.

use super::quant::{byte_addressable, qarg, qt_flag};
use super::{arg, grid, indexable, is_f32, src, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

/// The any_row.wgsl flags reading rows of `ty`: the family (A_FLOAT or A_QUANT) and the
/// type's dequant.wgsl flag.
pub fn a_flags(ty: Type) -> Option<[&'static str; 2]> {
    let qt = qt_flag(ty)?;
    Some([if ty.is_quantized() { "A_QUANT" } else { "A_FLOAT" }, qt])
}

/// Every type a row reader exists for (the float types, and the block types of dequant.wgsl).
#[cfg(test)]
pub fn a_types() -> impl Iterator<Item = Type> {
    Type::ALL.iter().copied().filter(|&t| a_flags(t).is_some())
}

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b), Some(ids)) = (node.src(0), node.src(1), node.src(2)) else {
        return false;
    };
    // ggml's constructor checks: as not transposed, rows packed (nb[0] is the block size).
    let a_ok = a_flags(a.ty()).is_some() && byte_addressable(a) && a.nb()[0] == a.ty().type_size();
    a_ok && is_f32(Some(b)) && b.nb()[0] == 4 && ids.ty() == Type::I32 && indexable(ids) && is_f32(Some(node))
}

fn key(a: Type) -> PipelineKey {
    let k = PipelineKey::new("mul_mat_id", "main").define("WG_SIZE", WG_ROWS);
    match a_flags(a) {
        Some([f, g]) => k.flag(f).flag(g),
        None => k,
    }
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    a_types().map(key).collect()
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let at = src(node, 0)?;
    let a = qarg(ctx, at, 1)?;
    let b = arg(ctx, src(node, 1)?, 2)?;
    let ids = arg(ctx, src(node, 2)?, 3)?;
    let d = arg(ctx, node, 4)?;
    let (k, m, n_expert) = (at.ne()[0] as u32, at.ne()[1] as u32, at.ne()[2] as u32);
    let nrb = m.div_ceil(WG_ROWS);
    let ne = node.ne();
    let groups = nrb as u64 * ne[1] as u64 * ne[2] as u64;
    let params = Params::default()
        .u32s(&d.layout)
        .u32s(&a.layout)
        .u32s(&b.layout)
        .u32s(&ids.layout)
        .u32s(&[d.elem_offset, b.elem_offset, ids.elem_offset, nrb])
        .u32s(&[a.byte_offset, k, n_expert, m])
        .finish();
    Ok(Some(Dispatch {
        key: key(at.ty()),
        params,
        bindings: vec![a.binding, b.binding, ids.binding, d.binding],
        groups: grid(ctx, groups)?,
    }))
}
