//! Ops of one tensor, elementwise.wgsl without B: the UNARY family, SQR, SQRT, LOG, SIN,
//! COS, SCALE, CLAMP, LEAKY_RELU (f32, as ggml-cpu has them), DIAG_MASK_INF/ZERO (f32, f16,
//! bf16), REPEAT and DIAG (bits copied: any 4- or 2-byte type) and REPEAT_BACK (f32).
//! Sources may have any strides; 16-bit results need a contiguous dst.

use super::elementwise::{self, writable, Io};
use super::{indexable, Dispatch, Kernel};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::{Op, UnaryOp};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

/// The shader function of each f32 map, None for the ops that are not one.
fn map_fn(op: Op) -> Option<&'static str> {
    Some(match op {
        Op::Scale { .. } => "op_scale",
        Op::Sqr => "op_sqr",
        Op::Sqrt => "op_sqrt",
        Op::Log => "op_log",
        Op::Sin => "op_sin",
        Op::Cos => "op_cos",
        Op::Clamp { .. } => "op_clamp",
        Op::LeakyRelu { .. } => "op_leaky_relu",
        Op::Unary { op } => unary_fn(op),
        _ => return None,
    })
}

fn unary_fn(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Abs => "op_abs",
        UnaryOp::Sgn => "op_sgn",
        UnaryOp::Neg => "op_neg",
        UnaryOp::Step => "op_step",
        UnaryOp::Tanh => "op_tanh",
        UnaryOp::Elu => "op_elu",
        UnaryOp::Relu => "op_relu",
        UnaryOp::Sigmoid => "op_sigmoid",
        UnaryOp::Gelu => "op_gelu",
        UnaryOp::GeluQuick => "op_gelu_quick",
        UnaryOp::Silu => "op_silu",
        UnaryOp::Hardswish => "op_hardswish",
        UnaryOp::Hardsigmoid => "op_hardsigmoid",
        UnaryOp::Exp => "op_exp",
    }
}

/// The variant and the io of a and dst for `node`, or None when this kernel cannot
/// compute it (types, layouts).
fn variant(node: &Tensor) -> Option<PipelineKey> {
    let a = node.src(0)?;
    if !indexable(a) || a.ty() != node.ty() {
        return None;
    }
    let op = node.op();
    let same = a.same_shape(node);
    let ty = node.ty();
    match op {
        Op::Repeat | Op::Diag => {
            let io = Io::raw(ty)?;
            let shape_ok = match op {
                Op::Repeat => a.can_repeat_to(node),
                // DIAG: a row [n, 1, n2, n3] spread over [n, n, n2, n3].
                _ => {
                    let (an, dn) = (a.ne(), node.ne());
                    an[1] == 1 && dn == [an[0], an[0], an[2], an[3]]
                }
            };
            let f = if matches!(op, Op::Repeat) { "op_copy" } else { "op_diag" };
            (shape_ok && writable(node, io)).then(|| elementwise::key(Some(f), io, None, io))
        }
        Op::DiagMaskInf { .. } | Op::DiagMaskZero { .. } => {
            let io = Io::float(ty)?;
            (same && writable(node, io)).then(|| elementwise::key(Some("op_diag_mask"), io, None, io))
        }
        // ggml sums in f32 only.
        Op::RepeatBack => (ty == Type::F32 && node.can_repeat_to(a) && writable(node, Io::F32))
            .then(|| elementwise::key(None, Io::F32, None, Io::F32)),
        // The maps: f32 only, as ggml-cpu.
        _ => {
            let f = map_fn(op)?;
            (ty == Type::F32 && same && writable(node, Io::F32))
                .then(|| elementwise::key(Some(f), Io::F32, None, Io::F32))
        }
    }
}

fn supports(node: &Tensor) -> bool {
    variant(node).is_some()
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v: Vec<PipelineKey> =
        ["op_scale", "op_sqr", "op_sqrt", "op_log", "op_sin", "op_cos", "op_clamp", "op_leaky_relu"]
            .into_iter()
            .chain(UnaryOp::ALL.iter().map(|&u| unary_fn(u)))
            .map(|f| elementwise::key(Some(f), Io::F32, None, Io::F32))
            .collect();
    for io in [Io::Raw32, Io::Raw16] {
        v.push(elementwise::key(Some("op_copy"), io, None, io));
        v.push(elementwise::key(Some("op_diag"), io, None, io));
    }
    v.extend(elementwise::FLOATS.map(|io| elementwise::key(Some("op_diag_mask"), io, None, io)));
    v.push(elementwise::key(None, Io::F32, None, Io::F32));
    v
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let key = variant(node).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let (f, u) = match node.op() {
        Op::Scale { s } => ([s, 0.0, 0.0, 0.0], 0),
        Op::Clamp { min, max } => ([min, max, 0.0, 0.0], 0),
        Op::LeakyRelu { negative_slope } => ([negative_slope, 0.0, 0.0, 0.0], 0),
        // The constructor checks n_past >= 0.
        Op::DiagMaskInf { n_past } => ([f32::NEG_INFINITY, 0.0, 0.0, 0.0], n_past.max(0) as u32),
        Op::DiagMaskZero { n_past } => ([0.0; 4], n_past.max(0) as u32),
        _ => ([0.0; 4], 0),
    };
    Ok(Some(elementwise::plan(node, ctx, key, 1, f, [u, 0, 0, 0])?))
}
