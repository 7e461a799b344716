//! GET_ROWS (every float and quantized type dequant.wgsl decodes, and i32) and
//! GET_ROWS_BACK (f32/f16 gradients): get_rows.wgsl and get_rows_back.wgsl.

use super::quant::{is_quant_rows, qarg, qt_flag};
use super::{arg, bind_node, grid_for_elements, indexable, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };
pub const BACK: Kernel = Kernel { supports: supports_back, plan: plan_back };

/// How a source is read: through dq4 (whole blocks; float rows of four) or element by element.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Read {
    Dq(Type),
    Plain(Type),
}

fn read_of(a: &Tensor) -> Option<Read> {
    let ty = a.ty();
    if ty.is_quantized() {
        return is_quant_rows(a).then_some(Read::Dq(ty));
    }
    if !matches!(ty, Type::F32 | Type::F16 | Type::BF16 | Type::I32) || !indexable(a) {
        return None;
    }
    // Packed float rows a multiple of 4 long go through dq4 too (its float sections).
    let packed = a.nb()[0] == ty.type_size() && a.ne()[0] % 4 == 0;
    Some(if ty != Type::I32 && packed { Read::Dq(ty) } else { Read::Plain(ty) })
}

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let out = if a.ty() == Type::I32 { Type::I32 } else { Type::F32 };
    let (ne, na, nb) = (node.ne(), a.ne(), b.ne());
    read_of(a).is_some()
        && b.ty() == Type::I32
        && indexable(b)
        && node.ty() == out
        && indexable(node)
        && ne == [na[0], nb[0], nb[1], nb[2]]
        && na[2] == nb[1]
        && nb[2] <= na[3]
}

fn key(read: Read) -> PipelineKey {
    let k = PipelineKey::new("get_rows", "main").define("WG_SIZE", WG_ELEMENTWISE);
    match read {
        Read::Dq(ty) => k.flag("DQ").flag(qt_flag(ty).unwrap_or("QT_F32")),
        Read::Plain(Type::F16) => k.flag("SRC_F16"),
        Read::Plain(Type::BF16) => k.flag("SRC_BF16"),
        Read::Plain(_) => k,
    }
}

/// Every variant these kernels compile, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v: Vec<PipelineKey> = super::quant::qt_types().map(|t| key(Read::Dq(t))).collect();
    v.extend([Type::F32, Type::F16, Type::BF16].map(|t| key(Read::Plain(t))));
    v.extend([None, Some(Type::F16)].map(key_back));
    v
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let a_t = src(node, 0)?;
    let read = read_of(a_t).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let rows = arg(ctx, src(node, 1)?, 2)?;
    let d = arg(ctx, node, 3)?;
    let (params, a_binding, n) = match read {
        Read::Dq(_) => {
            let a = qarg(ctx, a_t, 1)?;
            let n = (node.nelements() / 4) as u32;
            let params = Params::default()
                .u32s(&d.layout)
                .u32s(&a.layout)
                .u32s(&rows.layout)
                .u32s(&[d.elem_offset, a.byte_offset, rows.elem_offset, n])
                .finish();
            (params, a.binding, n)
        }
        Read::Plain(_) => {
            let a = arg(ctx, a_t, 1)?;
            let n = d.nelements;
            (Params::header(&d, &[Some(&a), Some(&rows)], n).finish(), a.binding, n)
        }
    };
    Ok(Some(Dispatch {
        key: key(read),
        params,
        bindings: vec![a_binding, rows.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}

fn supports_back(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    matches!(a.ty(), Type::F32 | Type::F16)
        && indexable(a)
        && b.ty() == Type::I32
        && indexable(b)
        && node.ty() == Type::F32
        && indexable(node)
        && node.ne()[0] == a.ne()[0]
        && a.ne()[1] >= b.ne()[0]
}

fn key_back(a: Option<Type>) -> PipelineKey {
    let k = PipelineKey::new("get_rows_back", "main").define("WG_SIZE", WG_ELEMENTWISE);
    if a == Some(Type::F16) {
        k.flag("SRC_F16")
    } else {
        k
    }
}

fn plan_back(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a, rows], d) = bind_node(ctx, node)?;
    let n = d.nelements;
    Ok(Some(Dispatch {
        key: key_back(Some(src(node, 0)?.ty())),
        params: Params::header(&d, &[Some(&a), Some(&rows)], n).finish(),
        bindings: vec![a.binding, rows.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}
