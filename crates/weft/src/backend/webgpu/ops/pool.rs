//! POOL_1D, POOL_2D (max, avg; f32 or f16 input) and POOL_2D_BACK (f32 gradient, f32 or
//! f16 pool input): pool.wgsl and pool_back.wgsl, one invocation per element of the result.
//! POOL_1D runs as POOL_2D with one-row windows (k1 = s1 = 1, p1 = 0), as the CPU backend
//! computes it.

use super::{bind_node, grid_for_elements, indexable, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::{Op, PoolOp};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const POOL: Kernel = Kernel { supports: pool_supports, plan: pool_plan };
pub const POOL_BACK: Kernel = Kernel { supports: pool_back_supports, plan: pool_back_plan };

/// The pooling op and [k0, k1, s0, s1, p0, p1] (ints, as ggml stores them); windows and
/// strides must be positive (the shaders divide by the strides).
fn geometry(op: Op) -> Option<(PoolOp, [i32; 6])> {
    let g = match op {
        Op::Pool1d { op, k0, s0, p0 } => (op, [k0, 1, s0, 1, p0, 0]),
        Op::Pool2d { p } | Op::Pool2dBack { p } => (p.op, [p.k0, p.k1, p.s0, p.s1, p.p0, p.p1]),
        _ => return None,
    };
    g.1[..4].iter().all(|&v| v > 0).then_some(g)
}

fn is_type(t: &Tensor, types: &[Type]) -> bool {
    types.contains(&t.ty()) && indexable(t)
}

fn pool_supports(node: &Tensor) -> bool {
    let Some(a) = node.src(0) else { return false };
    matches!(node.op(), Op::Pool1d { .. } | Op::Pool2d { .. })
        && geometry(node.op()).is_some()
        && is_type(node, &[Type::F32])
        && is_type(a, &[Type::F32, Type::F16])
        // Planes (dims 2, 3) are read at dst's coordinates; rows and columns are bounds-checked.
        && a.ne()[2] >= node.ne()[2]
        && a.ne()[3] >= node.ne()[3]
}

fn pool_back_supports(node: &Tensor) -> bool {
    let (Some(g), Some(x)) = (node.src(0), node.src(1)) else { return false };
    matches!(node.op(), Op::Pool2dBack { .. })
        && geometry(node.op()).is_some()
        && is_type(node, &[Type::F32])
        && is_type(g, &[Type::F32])
        && is_type(x, &[Type::F32, Type::F16])
        && x.same_shape(node)
        && g.ne()[2] >= node.ne()[2]
        && g.ne()[3] >= node.ne()[3]
}

#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v = Vec::new();
    for op in [PoolOp::Max, PoolOp::Avg] {
        for ty in [Type::F32, Type::F16] {
            v.push(key("pool", "SRC_F16", op, ty));
            v.push(key("pool_back", "X_F16", op, ty));
        }
    }
    v
}

fn key(shader: &'static str, f16_flag: &'static str, op: PoolOp, input: Type) -> PipelineKey {
    let mut k = PipelineKey::new(shader, "main").define("WG_SIZE", WG_ELEMENTWISE);
    if op == PoolOp::Max {
        k = k.flag("MAX");
    }
    if input == Type::F16 {
        k = k.flag(f16_flag);
    }
    k
}

/// The window params as the shaders take them: (k0, k1, s0, s1), (p0, p1, 0, 0).
fn window(g: [i32; 6]) -> [u32; 8] {
    [g[0], g[1], g[2], g[3], g[4], g[5], 0, 0].map(|v| v as u32)
}

fn pool_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let (Some((op, g)), Some(a)) = (geometry(node.op()), node.src(0)) else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let input = a.ty();
    let ([a], d) = bind_node(ctx, node)?;
    let n = d.nelements;
    Ok(Some(Dispatch {
        key: key("pool", "SRC_F16", op, input),
        params: Params::header(&d, &[Some(&a)], n).u32s(&window(g)).finish(),
        bindings: vec![a.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}

fn pool_back_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let (Some((op, g)), Some(x)) = (geometry(node.op()), node.src(1)) else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let input = x.ty();
    let ([grad, x], d) = bind_node(ctx, node)?;
    let n = d.nelements;
    Ok(Some(Dispatch {
        key: key("pool_back", "X_F16", op, input),
        params: Params::header(&d, &[Some(&grad), Some(&x)], n).u32s(&window(g)).finish(),
        // Average pooling never reads x, so its shader's layout has no x binding.
        bindings: if op == PoolOp::Max {
            vec![grad.binding, x.binding, d.binding]
        } else {
            vec![grad.binding, d.binding]
        },
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
