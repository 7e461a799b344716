//! IM2COL (f32 or f16 input and result), IM2COL_BACK and CONV_TRANSPOSE_1D/2D (f32 or f16
//! kernel, f32 input): im2col.wgsl, im2col_back.wgsl, conv_transpose.wgsl, one invocation
//! per output element (per 32-bit word of an f16 result). The 1-D ops run as their 2-D
//! form: each tensor is bound with a 4-D layout that has unit dims where the 1-D shapes
//! lack one (`as_4d`), and the params of the missing dim are the identity.

use super::{arg, grid_for_elements, indexable, src, Arg, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::{Tensor, MAX_DIMS};
use crate::types::Type;
use crate::{Error, Result};

pub const IM2COL: Kernel = Kernel { supports: im2col_supports, plan: im2col_plan };
pub const IM2COL_BACK: Kernel = Kernel { supports: im2col_back_supports, plan: im2col_back_plan };
pub const CONV_TRANSPOSE: Kernel = Kernel { supports: conv_transpose_supports, plan: conv_transpose_plan };

/// `a` as a shader sees it when its layout is replaced by a 4-D one whose dim i is a's dim
/// `dims[i]`, or a unit dim (size 1, stride 0) for None.
fn as_4d(mut a: Arg, dims: [Option<usize>; MAX_DIMS]) -> Arg {
    a.layout = view(a.layout, dims);
    a
}

fn view(layout: [u32; 2 * MAX_DIMS], dims: [Option<usize>; MAX_DIMS]) -> [u32; 2 * MAX_DIMS] {
    let mut out = [0; 2 * MAX_DIMS];
    for (i, d) in dims.iter().enumerate() {
        (out[i], out[MAX_DIMS + i]) = d.map_or((1, 0), |d| (layout[d], layout[MAX_DIMS + d]));
    }
    out
}

/// 1-D shapes seen as 2-D ones: [W, C, N] -> [W, 1, C, N].
const ROW_AS_IMAGE: [Option<usize>; MAX_DIMS] = [Some(0), None, Some(1), Some(2)];
const SAME: [Option<usize>; MAX_DIMS] = [Some(0), Some(1), Some(2), Some(3)];

fn is_type(t: &Tensor, types: &[Type]) -> bool {
    types.contains(&t.ty()) && indexable(t)
}

const FLOATS: &[Type] = &[Type::F32, Type::F16];

/// A params value the shaders take as i32 (they are i32 in ggml's op params).
fn i(v: i32) -> u32 {
    v as u32
}

// ---- IM2COL ----

fn im2col_supports(node: &Tensor) -> bool {
    let Op::Im2col { p } = node.op() else { return false };
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else { return false };
    // The kernel tensor's data is never read: only its shape matters.
    if !(is_type(node, FLOATS) && node.is_contiguous() && is_type(b, FLOATS)) {
        return false;
    }
    let (an, bn, dn) = (a.ne(), b.ne(), node.ne());
    let (kw, kh, ic) = if p.is_2d { (an[0], an[1], bn[2]) } else { (an[0], 1, bn[1]) };
    let (n_dst, n_b) = if p.is_2d { (dn[3], bn[3]) } else { (dn[2], bn[2]) };
    dn[0] == ic * kh * kw && n_dst <= n_b && (p.is_2d || (dn[3] == 1 && bn[3] == 1))
}

#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v = Vec::new();
    for src in [Type::F32, Type::F16] {
        for dst in [Type::F32, Type::F16] {
            v.push(im2col_key(src, dst));
        }
    }
    v.push(PipelineKey::new("im2col_back", "main").define("WG_SIZE", WG_ELEMENTWISE));
    v.extend([Type::F32, Type::F16].map(conv_transpose_key));
    v
}

fn im2col_key(src: Type, dst: Type) -> PipelineKey {
    let mut k = PipelineKey::new("im2col", "main").define("WG_SIZE", WG_ELEMENTWISE);
    if src == Type::F16 {
        k = k.flag("SRC_F16");
    }
    if dst == Type::F16 {
        k = k.flag("OUT_F16");
    }
    k
}

fn im2col_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::Im2col { p } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let (an, dn) = (src(node, 0)?.ne(), node.ne());
    let b_t = src(node, 1)?;
    let b = arg(ctx, b_t, 1)?;
    let d = arg(ctx, node, 2)?;
    // (KH, OH, N, the image's layout, s1, p1, d1); 1-D: one row, identity params.
    let (kh, oh, n, b, s1, p1, d1) = if p.is_2d {
        (an[1], dn[2], dn[3], as_4d(b, SAME), p.s1, p.p1, p.d1)
    } else {
        (1, 1, dn[2], as_4d(b, ROW_AS_IMAGE), 1, 0, 1)
    };
    let count = d.nelements;
    let f16_out = node.ty() == Type::F16;
    // An f16 result is written a 32-bit word (two halves) per invocation.
    let invocations = if f16_out {
        (d.elem_offset as u64 + count as u64).div_ceil(2) - d.elem_offset as u64 / 2
    } else {
        count as u64
    };
    let invocations = u32::try_from(invocations).map_err(|_| Error::unsupported("WebGPU: im2col result too large"))?;
    let params = Params::default()
        .u32s(&b.layout)
        .u32s(&[an[0] as u32, kh as u32, b.layout[2], 0])
        .u32s(&[dn[1] as u32, oh as u32, n as u32, count])
        .u32s(&[i(p.s0), i(s1), i(p.p0), i(p1)])
        .u32s(&[i(p.d0), i(d1), 0, 0])
        .u32s(&[d.elem_offset, b.elem_offset, invocations, 0])
        .finish();
    Ok(Some(Dispatch {
        key: im2col_key(b_t.ty(), node.ty()),
        params,
        bindings: vec![b.binding, d.binding],
        groups: grid_for_elements(ctx, invocations, WG_ELEMENTWISE)?,
    }))
}

// ---- IM2COL_BACK ----

fn im2col_back_supports(node: &Tensor) -> bool {
    let Op::Im2colBack { p } = node.op() else { return false };
    let (Some(a), Some(g)) = (node.src(0), node.src(1)) else { return false };
    if !(is_type(node, &[Type::F32]) && is_type(g, &[Type::F32])) {
        return false;
    }
    // The shader divides by the strides.
    if p.s0 <= 0 || (p.is_2d && p.s1 <= 0) {
        return false;
    }
    let (an, gn, dn) = (a.ne(), g.ne(), node.ne());
    let (kw, kh) = (an[0], if p.is_2d { an[1] } else { 1 });
    let (ic, n, n_g) = if p.is_2d { (dn[2], dn[3], gn[3]) } else { (dn[1], dn[2], gn[2]) };
    gn[0] == ic * kh * kw && n <= n_g && (p.is_2d || (dn[3] == 1 && gn[3] == 1))
}

fn im2col_back_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::Im2colBack { p } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let an = src(node, 0)?.ne();
    let g = arg(ctx, src(node, 1)?, 1)?;
    let d = arg(ctx, node, 2)?;
    let (kh, g, d, s1, p1, d1) = if p.is_2d {
        (an[1], as_4d(g, SAME), as_4d(d, SAME), p.s1, p.p1, p.d1)
    } else {
        // g [K, OW, N] -> [K, OW, 1, N]; dst [IW, IC, N] -> [IW, 1, IC, N].
        (1, as_4d(g, [Some(0), Some(1), None, Some(2)]), as_4d(d, ROW_AS_IMAGE), 1, 0, 1)
    };
    let n = d.nelements;
    let params = Params::default()
        .u32s(&d.layout)
        .u32s(&g.layout)
        .u32s(&[an[0] as u32, kh as u32, 0, 0])
        .u32s(&[i(p.s0), i(s1), i(p.p0), i(p1)])
        .u32s(&[i(p.d0), i(d1), 0, 0])
        .u32s(&[d.elem_offset, g.elem_offset, 0, n])
        .finish();
    Ok(Some(Dispatch {
        key: PipelineKey::new("im2col_back", "main").define("WG_SIZE", WG_ELEMENTWISE),
        params,
        bindings: vec![g.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}

// ---- CONV_TRANSPOSE_1D / 2D ----

/// The stride, for the two ops only.
fn conv_transpose_stride(op: Op) -> Option<i32> {
    match op {
        Op::ConvTranspose1d { s0, .. } => Some(s0),
        Op::ConvTranspose2d { stride } => Some(stride),
        _ => None,
    }
}

fn conv_transpose_supports(node: &Tensor) -> bool {
    let Some(s) = conv_transpose_stride(node.op()).filter(|&s| s > 0) else { return false };
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else { return false };
    if !(is_type(node, &[Type::F32]) && is_type(a, FLOATS) && is_type(b, &[Type::F32])) {
        return false;
    }
    let (an, bn, dn) = (a.ne(), b.ne(), node.ne());
    // The CPU backend refuses a result too small for the stride (params replaced later).
    let fits = |ins: i64, k: i64, out: i64| ins == 0 || (ins - 1) * s as i64 + k <= out;
    match node.op() {
        // a [K, Cout, Cin], b [L, Cin] -> dst [(L-1)*s + K, Cout].
        Op::ConvTranspose1d { .. } => {
            an[2] == bn[1]
                && an[3] == 1
                && bn[2] == 1
                && bn[3] == 1
                && dn[1] <= an[1]
                && dn[2] == 1
                && dn[3] == 1
                && fits(bn[0], an[0], dn[0])
        }
        // a [Kw, Kh, Cout, Cin], b [W, H, Cin, N] -> dst [(W-1)*s + Kw, (H-1)*s + Kh, Cout, N].
        _ => {
            an[3] == bn[2] && dn[2] <= an[2] && dn[3] <= bn[3] && fits(bn[0], an[0], dn[0]) && fits(bn[1], an[1], dn[1])
        }
    }
}

fn conv_transpose_key(kernel: Type) -> PipelineKey {
    let k = PipelineKey::new("conv_transpose", "main").define("WG_SIZE", WG_ELEMENTWISE);
    if kernel == Type::F16 {
        k.flag("KERNEL_F16")
    } else {
        k
    }
}

fn conv_transpose_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Some(s) = conv_transpose_stride(node.op()) else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let a_t = src(node, 0)?;
    let (a, b, d) = (arg(ctx, a_t, 1)?, arg(ctx, src(node, 1)?, 2)?, arg(ctx, node, 3)?);
    let (a, b, d) = if matches!(node.op(), Op::ConvTranspose1d { .. }) {
        // a [K, Cout, Cin] -> [K, 1, Cout, Cin]; b [L, Cin] -> [L, 1, Cin, 1];
        // dst [OW, Cout] -> [OW, 1, Cout, 1].
        let plane = [Some(0), None, Some(1), None];
        (as_4d(a, ROW_AS_IMAGE), as_4d(b, plane), as_4d(d, plane))
    } else {
        (a, b, d)
    };
    let n = d.nelements;
    let params = Params::header(&d, &[Some(&a), Some(&b)], n).u32s(&[i(s)]).finish();
    Ok(Some(Dispatch {
        key: conv_transpose_key(a_t.ty()),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_gain_unit_dims() {
        // [W=5, C=3, N=2] packed.
        let l = [5, 3, 2, 1, 1, 5, 15, 30];
        assert_eq!(view(l, ROW_AS_IMAGE), [5, 1, 3, 2, 1, 0, 5, 15]);
        assert_eq!(view(l, [Some(0), None, Some(1), None]), [5, 1, 3, 1, 1, 0, 5, 0]);
        assert_eq!(view(l, SAME), l);
    }
}
