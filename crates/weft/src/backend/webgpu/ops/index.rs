//! ARGMAX and ARGSORT (any float type in, i32 out): argmax.wgsl and argsort.wgsl, one
//! workgroup per row. ARGSORT sorts in workgroup memory for rows up to SORT_MAX long
//! (padded to a power of two), and in dst itself beyond.

use super::reduce::{load_a_flag, with_load_a};
use super::{bind_node, grid, indexable, src, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::{Op, SortOrder};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const ARGMAX: Kernel = Kernel { supports: supports_argmax, plan: plan_argmax };
pub const ARGSORT: Kernel = Kernel { supports: supports_argsort, plan: plan_argsort };

/// Longest (power-of-two padded) row sorted in workgroup memory: indices and values,
/// 8 KiB of the 16 KiB every WebGPU device offers.
const SORT_MAX: u32 = 1024;

fn float_src(node: &Tensor) -> bool {
    node.src(0).is_some_and(|s| load_a_flag(s.ty()).is_some() && indexable(s))
}

/// Refused until fixed: on rows holding NaN the kernel disagrees with ggml's loop
/// (webgpu_rows' argmax test, ignored meanwhile).
const ARGMAX_READY: bool = false;
/// Refused until fixed: rows with ties and NaN, and rows over SORT_MAX, disagree with the
/// CPU (webgpu_rows' argsort test, ignored meanwhile).
const ARGSORT_READY: bool = false;

fn supports_argmax(node: &Tensor) -> bool {
    ARGMAX_READY && matches!(node.op(), Op::Argmax) && node.ty() == Type::I32 && indexable(node) && float_src(node)
}

fn argmax_key(ty: Type) -> PipelineKey {
    with_load_a(PipelineKey::new("argmax", "main").define("WG_SIZE", WG_ROWS), ty)
}

fn plan_argmax(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let s = src(node, 0)?;
    let ([a], d) = bind_node(ctx, node)?;
    // The constructor makes a a matrix: one row per element of dst.
    let rows = s.ne()[1] as u32;
    let params = Params::header(&d, &[Some(&a)], rows).finish();
    Ok(Some(Dispatch {
        key: argmax_key(s.ty()),
        params,
        bindings: vec![a.binding, d.binding],
        groups: grid(ctx, rows as u64)?,
    }))
}

fn supports_argsort(node: &Tensor) -> bool {
    ARGSORT_READY
        && matches!(node.op(), Op::Argsort { .. })
        && node.ty() == Type::I32
        && indexable(node)
        && float_src(node)
        && node.src(0).is_some_and(|s| s.same_shape(node))
}

fn argsort_key(ty: Type, desc: bool, local: bool) -> PipelineKey {
    let mut k = PipelineKey::new("argsort", "main").define("WG_SIZE", WG_ROWS).define("SORT_MAX", SORT_MAX);
    if desc {
        k = k.flag("DESC");
    }
    if local {
        k = k.flag("LOCAL");
    }
    with_load_a(k, ty)
}

fn plan_argsort(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::Argsort { order } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let s = src(node, 0)?;
    let ([a], d) = bind_node(ctx, node)?;
    let rows = s.nrows() as u32;
    // The shader doubles its merge size up to n_pad in u32: at most 2^30 (rows that long
    // exceed any storage binding anyway).
    let n_pad = (s.ne()[0].max(1) as u64).next_power_of_two();
    if n_pad > 1 << 30 {
        return Err(crate::Error::unsupported(format!("WebGPU: argsort rows of {} elements are too long", s.ne()[0])));
    }
    let n_pad = n_pad as u32;
    let params = Params::header(&d, &[Some(&a)], rows).u32s(&[n_pad]).finish();
    Ok(Some(Dispatch {
        key: argsort_key(s.ty(), order == SortOrder::Desc, n_pad <= SORT_MAX),
        params,
        bindings: vec![a.binding, d.binding],
        groups: grid(ctx, rows as u64)?,
    }))
}

/// Every variant this module compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v = Vec::new();
    for ty in [Type::F32, Type::F16, Type::BF16] {
        v.push(argmax_key(ty));
        for desc in [false, true] {
            for local in [false, true] {
                v.push(argsort_key(ty, desc, local));
            }
        }
    }
    v
}
