//! Ops of two tensors, elementwise.wgsl with B: ADD, SUB, MUL, DIV with ggml's
//! broadcasting of b over a, ADD1 (b a scalar) and SILU_BACK (f32). a, b and dst f32, f16
//! or bf16 (dst a's type), any strides; 16-bit results need a contiguous dst.

use super::elementwise::{self, writable, Io};
use super::{indexable, Dispatch, Kernel};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

/// The variant computing `node`, or None when this kernel cannot (types, shapes, layouts).
fn variant(node: &Tensor) -> Option<PipelineKey> {
    let (a, b) = (node.src(0)?, node.src(1)?);
    let (ai, bi) = (Io::float(a.ty())?, Io::float(b.ty())?);
    if !(indexable(a) && indexable(b) && a.same_shape(node) && node.ty() == a.ty() && writable(node, ai)) {
        return None;
    }
    let (f, ok) = match node.op() {
        Op::Add => ("op_add", b.can_repeat_to(a)),
        Op::Sub => ("op_sub", b.can_repeat_to(a)),
        Op::Mul => ("op_mul", b.can_repeat_to(a)),
        Op::Div => ("op_div", b.can_repeat_to(a)),
        // a + b for a scalar b (f32 or a's type): b repeats over every element.
        Op::Add1 => ("op_add", b.is_scalar() && (b.ty() == Type::F32 || b.ty() == a.ty())),
        Op::SiluBack => ("op_silu_back", a.ty() == Type::F32 && b.ty() == Type::F32 && b.same_shape(a)),
        _ => return None,
    };
    ok.then(|| elementwise::key(Some(f), ai, Some(bi), ai))
}

fn supports(node: &Tensor) -> bool {
    variant(node).is_some()
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v = Vec::new();
    for f in ["op_add", "op_sub", "op_mul", "op_div"] {
        for a in elementwise::FLOATS {
            for b in elementwise::FLOATS {
                v.push(elementwise::key(Some(f), a, Some(b), a));
            }
        }
    }
    v.push(elementwise::key(Some("op_silu_back"), Io::F32, Some(Io::F32), Io::F32));
    v
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let key = variant(node).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    Ok(Some(elementwise::plan(node, ctx, key, 2, [0.0; 4], [0; 4])?))
}
