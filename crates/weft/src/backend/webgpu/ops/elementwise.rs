//! What the elementwise kernels (unary.rs, binary.rs) share: elementwise.wgsl's variants
//! (op function, how each tensor is read or written) and its one dispatch shape.

use super::{arg, grid_for_elements, indexable, src, Dispatch, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

/// How the shader reads or writes one tensor: a float type computed in f32, or bits
/// copied as they are (32 or 16 of them).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Io {
    F32,
    F16,
    Bf16,
    Raw32,
    Raw16,
}

/// The float ios, for the kernels' variant lists.
#[cfg(test)]
pub const FLOATS: [Io; 3] = [Io::F32, Io::F16, Io::Bf16];

impl Io {
    /// A float type the shader converts to and from f32.
    pub fn float(ty: Type) -> Option<Io> {
        match ty {
            Type::F32 => Some(Io::F32),
            Type::F16 => Some(Io::F16),
            Type::BF16 => Some(Io::Bf16),
            _ => None,
        }
    }

    /// A type whose elements are copied as 32 or 16 bits.
    pub fn raw(ty: Type) -> Option<Io> {
        if ty.is_quantized() || ty.blck_size() != 1 {
            return None;
        }
        match ty.type_size() {
            4 => Some(Io::Raw32),
            2 => Some(Io::Raw16),
            _ => None,
        }
    }

    fn is_16(self) -> bool {
        matches!(self, Io::F16 | Io::Bf16 | Io::Raw16)
    }

    fn index(self) -> usize {
        self as usize
    }
}

const A_FLAGS: [&str; 5] = ["A_F32", "A_F16", "A_BF16", "A_RAW32", "A_RAW16"];
const B_FLAGS: [&str; 5] = ["B_F32", "B_F16", "B_BF16", "B_RAW32", "B_RAW16"];
const D_FLAGS: [&str; 5] = ["D_F32", "D_F16", "D_BF16", "D_RAW32", "D_RAW16"];

/// Whether the shader can write `t` as `io`: 16-bit results are written a 32-bit word at
/// a time, which needs a contiguous dst.
pub fn writable(t: &Tensor, io: Io) -> bool {
    indexable(t) && (!io.is_16() || t.is_contiguous())
}

/// The variant computing `op` (an `op_*` function of elementwise.wgsl, or None for
/// REPEAT_BACK) from a (and b) into dst.
pub fn key(op: Option<&'static str>, a: Io, b: Option<Io>, d: Io) -> PipelineKey {
    let raw = matches!(a, Io::Raw32 | Io::Raw16);
    let mut k = PipelineKey::new("elementwise", "main")
        .define("WG_SIZE", WG_ELEMENTWISE)
        .define("V", if raw { "u32" } else { "f32" })
        .define("D_BINDING", if b.is_some() { 3 } else { 2 })
        .flag(A_FLAGS[a.index()])
        .flag(D_FLAGS[d.index()]);
    k = match op {
        Some(f) => k.define("OP", f),
        None => k.flag("REPEAT_BACK"),
    };
    if let Some(b) = b {
        k = k.flag("B").flag(B_FLAGS[b.index()]);
    }
    if d.is_16() {
        k = k.flag("D_PAIRED");
    }
    k
}

/// The dispatch of `key` over dst = `node` with its first `nsrc` (1 or 2) sources, the op's
/// scalars in `f` and `u`.
pub fn plan(
    node: &Tensor,
    ctx: &GpuContext,
    key: PipelineKey,
    nsrc: u32,
    f: [f32; 4],
    u: [u32; 4],
) -> Result<Dispatch> {
    let a = arg(ctx, src(node, 0)?, 1)?;
    let b = if nsrc == 2 { Some(arg(ctx, src(node, 1)?, 2)?) } else { None };
    let d = arg(ctx, node, nsrc + 1)?;
    let n = d.nelements;
    // D_PAIRED: one invocation per word holding an element of dst.
    let invocations = if key.defines.iter().any(|(k, _)| *k == "D_PAIRED") {
        (d.elem_offset % 2).saturating_add(n).div_ceil(2)
    } else {
        n
    };
    let params = Params::header(&d, &[Some(&a), b.as_ref()], n).f32s(&f).u32s(&u).finish();
    let mut bindings = vec![a.binding];
    bindings.extend(b.map(|b| b.binding));
    bindings.push(d.binding);
    Ok(Dispatch { key, params, bindings, groups: grid_for_elements(ctx, invocations, WG_ELEMENTWISE)? })
}
