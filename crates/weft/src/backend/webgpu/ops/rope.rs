//! ROPE and ROPE_BACK (f32 and f16, normal and NeoX modes, YaRN ext params, optional
//! frequency factors): rope.wgsl, one invocation per rotated pair. The per-node constants
//! (theta_scale, YaRN's corr dims and magnitude) are computed here with the CPU backend's
//! own f32 arithmetic, so the shader's angles follow the CPU's step by step.

use super::{arg, grid_for_elements, indexable, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::{c_max, Op, RopeParams, ROPE_TYPE_NEOX};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, plan };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(pos)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let p = match node.op() {
        Op::Rope { p } | Op::RopeBack { p } => p,
        _ => return false,
    };
    matches!(a.ty(), Type::F32 | Type::F16)
        && node.ty() == a.ty()
        && a.same_shape(node)
        && indexable(a)
        && indexable(node)
        && pos.ty() == Type::I32
        && indexable(pos)
        && pos.ne()[0] >= a.ne()[2]
        && p.n_dims >= 0
        && p.n_dims % 2 == 0
        && p.n_dims as i64 <= a.ne()[0]
        && node.src(2).is_none_or(|f| f.ty() == Type::F32 && indexable(f) && f.ne()[0] >= (p.n_dims / 2) as i64)
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v = Vec::new();
    for f16 in [false, true] {
        for ff in [false, true] {
            v.push(key(f16, ff));
        }
    }
    v
}

fn key(f16: bool, ff: bool) -> PipelineKey {
    let mut k = PipelineKey::new("rope", "main").define("WG_SIZE", WG_ELEMENTWISE);
    if f16 {
        k = k.flag("F16");
    }
    if ff {
        k = k.flag("FF");
    }
    k
}

/// The shader's per-node constants, as the CPU backend computes them:
/// [theta_scale, freq_scale, ext_factor, mscale, corr_low, corr_denom].
fn constants(p: &RopeParams) -> [f32; 6] {
    let theta_scale = p.theta_scale();
    let corr = p.yarn_corr_dims();
    let mut mscale = p.attn_factor;
    if p.ext_factor != 0.0 {
        mscale *= 0.1f32.mul_add((1.0 / p.freq_scale).ln(), 1.0);
    }
    // C's MAX(0.001f, high - low), as the CPU's ramp divides by it.
    [theta_scale, p.freq_scale, p.ext_factor, mscale, corr[0], c_max(0.001, corr[1] - corr[0])]
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let (p, sin_sign) = match node.op() {
        Op::Rope { p } => (p, 1.0f32),
        Op::RopeBack { p } => (p, -1.0f32),
        _ => return Err(crate::backend::unsupported("WebGPU", node)),
    };
    let a = arg(ctx, src(node, 0)?, 1)?;
    let pos = arg(ctx, src(node, 1)?, 2)?;
    let ff = node.src(2).map(|f| arg(ctx, f, 3)).transpose()?;
    let d = arg(ctx, node, 4)?;
    let ne0 = node.ne()[0] as u32;
    let n_dims = p.n_dims.max(0) as u32;
    let per_row = ne0 - n_dims / 2;
    let count = (node.nrows() as u64) * per_row as u64;
    let count = u32::try_from(count).map_err(|_| Error::unsupported("WebGPU: rope: too many invocations"))?;
    let neox = (p.mode & ROPE_TYPE_NEOX != 0) as u32;
    let (ff_off, ff_stride) = ff.as_ref().map_or((0, 0), |f| (f.elem_offset, f.layout[4]));
    let params = Params::header(&d, &[Some(&a), Some(&pos)], count)
        .u32s(&[ff_off, ff_stride, n_dims, neox])
        .f32s(&constants(&p))
        .f32s(&[sin_sign])
        .u32s(&[per_row.max(1)])
        .finish();
    let mut bindings = vec![a.binding, pos.binding];
    bindings.extend(ff.map(|f| f.binding));
    bindings.push(d.binding);
    Ok(Some(Dispatch {
        key: key(node.ty() == Type::F16, node.src(2).is_some()),
        params,
        bindings,
        groups: grid_for_elements(ctx, count, WG_ELEMENTWISE)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_follow_the_cpu() {
        let p = RopeParams {
            n_dims: 128,
            mode: 0,
            n_ctx_orig: 0,
            freq_base: 10000.0,
            freq_scale: 1.4245,
            ext_factor: 0.7465,
            attn_factor: 1.0,
            beta_fast: 1.0,
            beta_slow: 1.0,
        };
        let c = constants(&p);
        assert_eq!(c[0], 10000f32.powf(-2.0 / 128.0));
        // n_ctx_orig 0: corr dims [0, -inf], so the ramp's denominator is 0.001.
        assert_eq!((c[4], c[5]), (0.0, 0.001));
        assert_eq!(c[3], 0.1f32.mul_add((1.0 / 1.4245f32).ln(), 1.0));
        assert_eq!(constants(&RopeParams { ext_factor: 0.0, ..p })[3], 1.0);
        // The CPU backend's worked example (cpu/ops/rope.rs), through the shared RopeParams.
        assert_eq!(RopeParams { n_ctx_orig: 4096, beta_fast: 32.0, ..p }.yarn_corr_dims(), [20.0, 46.0]);
    }
}
