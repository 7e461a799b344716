//! OUT_PROD: out_prod.wgsl, four consecutive outputs of one dst row per invocation, summed
//! over j ascending with fused multiply-adds as the CPU does. a in f32, f16, bf16 or any
//! block type of dequant.wgsl (rows of blocks along a's dim 0), broadcast over dims 2 and
//! 3; b f32 or f16 with any strides.

use super::mul_mat_id::a_flags;
#[cfg(test)]
use super::mul_mat_id::a_types;
use super::quant::{byte_addressable, qarg};
use super::{arg, grid, indexable, is_f32, src, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    // The constructor keeps a packed (nb[0] is the block size).
    let a_ok = a_flags(a.ty()).is_some() && byte_addressable(a) && a.nb()[0] == a.ty().type_size();
    a_ok && matches!(b.ty(), Type::F32 | Type::F16) && indexable(b) && is_f32(Some(node))
}

fn key(a: Type, b: Type) -> PipelineKey {
    let mut k = PipelineKey::new("out_prod", "main").define("WG_SIZE", WG_ROWS);
    if let Some([f, g]) = a_flags(a) {
        k = k.flag(f).flag(g);
    }
    if b == Type::F16 {
        k = k.flag("B_F16");
    }
    k
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    a_types().flat_map(|a| [key(a, Type::F32), key(a, Type::F16)]).collect()
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let (at, bt) = (src(node, 0)?, src(node, 1)?);
    let a = qarg(ctx, at, 1)?;
    let b = arg(ctx, bt, 2)?;
    let d = arg(ctx, node, 3)?;
    let ne = node.ne();
    let (an, m) = (at.ne(), ne[0] as u32);
    // Invocations of four outputs per dst row, in workgroups of WG_ROWS.
    let ncb = m.div_ceil(4).div_ceil(WG_ROWS);
    let rows = (ne[1] * ne[2] * ne[3]) as u32;
    let (r2, r3) = ((ne[2] / an[2].max(1)).max(1) as u32, (ne[3] / an[3].max(1)).max(1) as u32);
    let params = Params::default()
        .u32s(&d.layout)
        .u32s(&a.layout)
        .u32s(&b.layout)
        .u32s(&[d.elem_offset, b.elem_offset, a.byte_offset, ncb])
        .u32s(&[r2, r3, rows, 0])
        .finish();
    Ok(Some(Dispatch {
        key: key(at.ty(), bt.ty()),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid(ctx, ncb as u64 * rows as u64)?,
    }))
}
