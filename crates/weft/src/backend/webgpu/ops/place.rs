//! CONCAT, PAD, UPSCALE, WIN_PART, WIN_UNPART and GET_REL_POS: place.wgsl, one invocation
//! per dst element, copying the bits of one source element (or writing zero). Like the CPU
//! backend's gather kernels, any plain element type works, sources and dst of one type.

use super::{arg, grid_for_elements, indexable, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, plan };

/// Element types copied as bits (the CPU backend's plain types).
fn plain(ty: Type) -> bool {
    matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::F64)
}

/// The node, and its first `n` sources, all indexable and of the node's plain type.
fn same_plain_type(node: &Tensor, n: usize) -> bool {
    let ty = node.ty();
    plain(ty) && indexable(node) && (0..n).all(|i| node.src(i).is_some_and(|s| s.ty() == ty && indexable(s)))
}

fn supports(node: &Tensor) -> bool {
    let dn = node.ne();
    let Some(a) = node.src(0) else { return false };
    let an = a.ne();
    match node.op() {
        Op::Concat { dim } => {
            let Some(b) = node.src(1) else { return false };
            let bn = b.ne();
            let dim = dim as usize;
            same_plain_type(node, 2)
                && dim < 4
                && (0..4).all(|k| if k == dim { an[k] + bn[k] == dn[k] } else { an[k] == dn[k] && bn[k] == dn[k] })
        }
        Op::Pad | Op::Upscale => same_plain_type(node, 1),
        // Row (kh - 1 - i1) + i2 of a, for i1 < kh and i2 < qh.
        Op::GetRelPos => same_plain_type(node, 1) && (dn[1] == 0 || dn[2] == 0 || dn[1] + dn[2] - 1 <= an[1]),
        Op::WinPart { w, .. } => same_plain_type(node, 1) && w > 0,
        // Every window read lies inside a (the constructor checks it; params can be
        // replaced later, so again here, as the CPU backend does).
        Op::WinUnpart { w } => {
            let (w0, h0, w) = (dn[1], dn[2], w as i64);
            same_plain_type(node, 1)
                && w > 0
                && (w0 == 0
                    || h0 == 0
                    || (an[1] >= w && an[2] >= w && ((h0 - 1) / w) * unpart_npx(w0, w) + (w0 - 1) / w < an[3]))
        }
        _ => false,
    }
}

/// WIN_UNPART's windows per image row: ceil(w0 / w) as ggml computes it (w > 0).
fn unpart_npx(w0: i64, w: i64) -> i64 {
    (w0 + (w - w0 % w) % w) / w
}

/// The shader's map function and whether it reads a second source.
fn map_fn(op: Op) -> (&'static str, bool) {
    match op {
        Op::Concat { .. } => ("map_concat", true),
        Op::Upscale => ("map_upscale", false),
        Op::WinPart { .. } => ("map_win_part", false),
        Op::WinUnpart { .. } => ("map_win_unpart", false),
        Op::GetRelPos => ("map_get_rel_pos", false),
        _ => ("map_pad", false),
    }
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let ops = [
        Op::Concat { dim: 0 },
        Op::Pad,
        Op::Upscale,
        Op::WinPart { npx: 1, npy: 1, w: 1 },
        Op::WinUnpart { w: 1 },
        Op::GetRelPos,
    ];
    ops.into_iter().flat_map(|op| [1, 2, 4, 8].map(|es| key(op, es))).collect()
}

fn key(op: Op, es: usize) -> PipelineKey {
    let (map, two) = map_fn(op);
    let mut k = PipelineKey::new("place", "main").define("MAP", map).define("ES", es).define("WG_SIZE", WG_ELEMENTWISE);
    if two {
        k = k.flag("TWO_SRC");
    }
    if es < 4 {
        k = k.flag("SUBWORD");
    }
    k
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let op = node.op();
    let a_t = src(node, 0)?;
    let (an, dn) = (a_t.ne(), node.ne());
    let two = map_fn(op).1;
    let a = arg(ctx, a_t, 1)?;
    let b = if two { Some(arg(ctx, src(node, 1)?, 2)?) } else { None };
    let d = arg(ctx, node, 3)?;
    let mut u = [0u32; 4];
    let mut f = [1f32; 4];
    match op {
        Op::Concat { dim } => u[0] = dim as u32,
        Op::WinPart { npx, w, .. } => u[..2].copy_from_slice(&[npx.max(1) as u32, w as u32]),
        Op::WinUnpart { w } => {
            let w = w.max(1) as i64;
            u[..2].copy_from_slice(&[w as u32, unpart_npx(dn[1], w) as u32]);
        }
        // ggml's scale factors: (float)ne / ne0 per dim.
        Op::Upscale => f = std::array::from_fn(|k| dn[k] as f32 / an[k] as f32),
        Op::Pad | Op::GetRelPos => {}
        _ => return Err(crate::backend::unsupported("WebGPU", node)),
    }
    let n = d.nelements;
    let es = node.ty().type_size();
    if ![1, 2, 4, 8].contains(&es) {
        return Err(Error::unsupported(format!("WebGPU: {}: {es}-byte elements", op.name())));
    }
    let params = Params::header(&d, &[Some(&a), b.as_ref()], n).u32s(&u).f32s(&f).finish();
    let mut bindings = vec![a.binding];
    bindings.extend(b.map(|b| b.binding));
    bindings.push(d.binding);
    Ok(Some(Dispatch { key: key(op, es), params, bindings, groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)? }))
}
