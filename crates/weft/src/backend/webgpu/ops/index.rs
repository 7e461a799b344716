//! ARGMAX and ARGSORT (any float type in, i32 out): argmax.wgsl and argsort.wgsl, one
//! workgroup per row. ARGSORT sorts rows up to SORT_MAX long in workgroup memory.

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

/// Longest row ARGSORT takes. A row with ties or NaN is re-sorted by one invocation
/// replaying ggml's exchange sort (argsort.wgsl), whose order among equal values no parallel
/// sort reproduces; its n(n-1)/2 steps must stay under lavapipe's 65535 loop iterations per
/// invocation. The suite's rows are at most 60 long; longer ones run on another backend.
const SORT_MAX: u32 = 256;

fn float_src(node: &Tensor) -> bool {
    node.src(0).is_some_and(|s| load_a_flag(s.ty()).is_some() && indexable(s))
}

fn supports_argmax(node: &Tensor) -> bool {
    matches!(node.op(), Op::Argmax) && node.ty() == Type::I32 && indexable(node) && float_src(node)
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
    matches!(node.op(), Op::Argsort { .. })
        && node.ne()[0] <= SORT_MAX as i64
        && node.ty() == Type::I32
        && indexable(node)
        && float_src(node)
        && node.src(0).is_some_and(|s| s.same_shape(node))
}

fn argsort_key(ty: Type, desc: bool) -> PipelineKey {
    let mut k = PipelineKey::new("argsort", "main").define("WG_SIZE", WG_ROWS).define("SORT_MAX", SORT_MAX);
    if desc {
        k = k.flag("DESC");
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
    // supports keeps rows within SORT_MAX.
    let n_pad = (s.ne()[0].max(1) as u32).next_power_of_two();
    let params = Params::header(&d, &[Some(&a)], rows).u32s(&[n_pad]).finish();
    Ok(Some(Dispatch {
        key: argsort_key(s.ty(), order == SortOrder::Desc),
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
            v.push(argsort_key(ty, desc));
        }
    }
    v
}
