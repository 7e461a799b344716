//! ARANGE and TIMESTEP_EMBEDDING (f32 results; f32, f16 or bf16 timesteps): generate.wgsl,
//! one invocation per element.

use super::{arg, grid_for_elements, indexable, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    let out_ok = node.ty() == Type::F32 && indexable(node);
    match node.op() {
        Op::Arange { .. } => out_ok,
        Op::TimestepEmbedding { dim, .. } => {
            out_ok
                && dim >= 0
                && 2 * (dim / 2) as i64 <= node.ne()[0]
                && node.src(0).is_some_and(|t| {
                    matches!(t.ty(), Type::F32 | Type::F16 | Type::BF16) && indexable(t) && t.ne()[0] >= node.ne()[1]
                })
        }
        _ => false,
    }
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    vec![key(None), key(Some(Type::F32)), key(Some(Type::F16)), key(Some(Type::BF16))]
}

/// ARANGE (no source), or TIMESTEP_EMBEDDING with timesteps of type `ts`.
fn key(ts: Option<Type>) -> PipelineKey {
    let k = PipelineKey::new("generate", "main").define("WG_SIZE", WG_ELEMENTWISE);
    match ts {
        None => k.define("OP", "op_arange"),
        Some(t) => {
            let k = k.define("OP", "op_timestep").flag("TIMESTEPS");
            match t {
                Type::F16 => k.flag("SRC_F16"),
                Type::BF16 => k.flag("SRC_BF16"),
                _ => k.flag("SRC_F32"),
            }
        }
    }
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    match node.op() {
        Op::Arange { start, step, .. } => {
            let d = arg(ctx, node, 2)?;
            let n = d.nelements;
            Ok(Some(Dispatch {
                key: key(None),
                params: Params::header(&d, &[None], n).f32s(&[start, step, 0.0, 0.0]).u32s(&[0]).finish(),
                bindings: vec![d.binding],
                groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
            }))
        }
        Op::TimestepEmbedding { dim, max_period } => {
            let t = src(node, 0)?;
            let a = arg(ctx, t, 1)?;
            let d = arg(ctx, node, 2)?;
            let n = d.nelements;
            // As the CPU backend: ln(max_period) in f32, half = dim / 2.
            let log_period = (max_period as f32).ln();
            let half = (dim / 2).max(0) as u32;
            Ok(Some(Dispatch {
                key: key(Some(t.ty())),
                params: Params::header(&d, &[Some(&a)], n).f32s(&[log_period, 0.0, 0.0, 0.0]).u32s(&[half]).finish(),
                bindings: vec![a.binding, d.binding],
                groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
            }))
        }
        _ => Err(crate::backend::unsupported("WebGPU", node)),
    }
}
