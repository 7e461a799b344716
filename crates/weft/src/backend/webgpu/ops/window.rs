//! SET (any 4-byte type, bits copied) and ACC (f32): set.wgsl, b written or added into a
//! window of a copy of a, one dispatch. Windows whose elements overlap (strides smaller
//! than the extent below them) are refused: ggml's result there depends on its write order.

use super::{arg, grid_for_elements, indexable, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

/// The window in elements: (offset, strides largest first, b's extent and dim of each),
/// or None when it is not whole elements, does not fit u32 or overlaps itself.
type Window = (u32, [u32; 4], [u32; 4], [u32; 4]);

fn window(node: &Tensor) -> Option<Window> {
    let (nb1, nb2, nb3, offset) = match node.op() {
        Op::Set { nb1, nb2, nb3, offset, .. } | Op::Acc { nb1, nb2, nb3, offset, .. } => (nb1, nb2, nb3, offset),
        _ => return None,
    };
    let b = node.src(1)?;
    let es = node.ty().type_size();
    let bytes = [es, nb1, nb2, nb3];
    if offset % es != 0 || bytes.iter().any(|&s| s % es != 0) || b.nelements() == 0 {
        return None;
    }
    let el = |x: usize| u32::try_from(x / es).ok();
    let ne = b.ne();
    // The dims b actually steps, smallest stride first.
    let mut dims: Vec<(u32, u32, u32)> = Vec::new();
    for (d, (&n, &s)) in ne.iter().zip(&bytes).enumerate() {
        if n > 1 {
            dims.push((el(s)?, u32::try_from(n).ok()?, d as u32));
        }
    }
    dims.sort_by_key(|&(s, _, _)| s);
    // Each stride must step over everything the smaller ones reach.
    let mut extent = 1u64;
    for &(s, n, _) in &dims {
        if (s as u64) < extent {
            return None;
        }
        extent += s as u64 * (n as u64 - 1);
    }
    // Largest first, then the dims of extent 1 (stride 1: their coordinate comes out 0
    // once the others have taken the whole offset, and anything left over is outside).
    let flat = (0..4u32).filter(|&d| ne[d as usize] <= 1).map(|d| (1, 1, d));
    let (mut nb, mut n, mut dim) = ([1u32; 4], [1u32; 4], [0u32; 4]);
    for (k, (s, e, d)) in dims.iter().rev().copied().chain(flat).enumerate() {
        (nb[k], n[k], dim[k]) = (s, e, d);
    }
    Some((el(offset)?, nb, n, dim))
}

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else { return false };
    let ty = node.ty();
    let ty_ok = match node.op() {
        Op::Set { .. } => ty.type_size() == 4 && !ty.is_quantized() && ty.blck_size() == 1,
        _ => ty == Type::F32,
    };
    ty_ok
        && a.ty() == ty
        && b.ty() == ty
        && a.same_shape(node)
        && a.is_contiguous()
        && node.is_contiguous()
        && indexable(a)
        && indexable(b)
        && indexable(node)
        && window(node).is_some()
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key(false), key(true)]
}

fn key(acc: bool) -> PipelineKey {
    let k = PipelineKey::new("set", "main").define("WG_SIZE", WG_ELEMENTWISE);
    if acc {
        k.define("T", "f32").flag("ACC")
    } else {
        k.define("T", "u32")
    }
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let w = window(node).filter(|_| supports(node)).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let (a, b, d) = (arg(ctx, src(node, 0)?, 1)?, arg(ctx, src(node, 1)?, 2)?, arg(ctx, node, 3)?);
    let n = d.nelements;
    let (off, nb, ne, dim) = w;
    let params =
        Params::header(&d, &[Some(&a), Some(&b)], n).u32s(&nb).u32s(&ne).u32s(&dim).u32s(&[off, 0, 0, 0]).finish();
    Ok(Some(Dispatch {
        key: key(matches!(node.op(), Op::Acc { .. })),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
