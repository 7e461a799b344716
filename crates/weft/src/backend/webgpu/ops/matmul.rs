//! MUL_MAT: a of any type the suite has (f32, f16, bf16, every quantized type dequant.wgsl
//! decodes), b f32 or f16, dst f32; a broadcast over b's dims 2 and 3; permuted and strided
//! operands (float a with any element strides, quantized a with packed blocks along its
//! rows and rows at any byte stride).
//!
//! Two kernel shapes, picked per node: `mul_mat_vec.wgsl` for small n (b.ne[1] <= 8: one
//! pass over a's bytes, rows of a per workgroup, a workgroup or subgroup reduction) and
//! `mul_mm.wgsl` for the rest (a 64 x 64 tiled GEMM through workgroup memory). The naive
//! f32 kernel it replaced (`mul_mat.wgsl`, one invocation per output) stays for the bench
//! and for a forced `naive`. `WEFT_WEBGPU_MATMUL=naive|matvec|tiled` (read when the device
//! opens) or a backend's `set_option("matmul", naive|matvec|tiled|auto)` forces a shape on
//! the device (naive only where both operands are f32).
//!
//! Optional features (context.rs masks them with `WEFT_WEBGPU_DISABLE`): SHADER_F16 reads
//! f16 operands through native f16 storage and keeps an f16 a's GEMM tile in f16; SUBGROUP
//! makes the mat-vec reduction a subgroupAdd. Float operands with contiguous, 4-aligned rows
//! are bound as arrays of vec4 (A_VEC4, B_VEC4): one load per 4-element chunk. Every variant
//! accumulates in f32.

use super::quant::{is_quant_rows, qarg, qt_flag};
use super::{arg, grid, grid_for_elements, indexable, src, Arg, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, plan };

/// Columns of b up to which the mat-vec kernel is used (ggml-vulkan's mul_mat_vec limit).
const MATVEC_MAX_N: i64 = 8;
/// Rows of a per mat-vec workgroup, and its invocations.
const MATVEC_NR: u32 = 4;
const MATVEC_WG: u32 = 64;
/// The tiled GEMM's output tile (mul_mm.wgsl's BM = BN).
const TILE: u32 = 64;

/// How a kernel reads a: the shader flag choosing its type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum AType {
    F32,
    F16,
    BF16,
    /// Quantized: dequant.wgsl's `QT_<TYPE>` flag.
    Quant(&'static str),
}

impl AType {
    fn of(ty: Type) -> Option<AType> {
        match ty {
            Type::F32 => Some(AType::F32),
            Type::F16 => Some(AType::F16),
            Type::BF16 => Some(AType::BF16),
            t if t.is_quantized() => qt_flag(t).map(AType::Quant),
            _ => None,
        }
    }
}

/// The kernel shapes; `Naive` is the replaced one-invocation-per-output f32 kernel. As a
/// u8 in GpuContext::matmul_shape (0: none forced).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Shape {
    Naive = 1,
    MatVec = 2,
    Tiled = 3,
}

impl Shape {
    /// `naive`, `matvec` or `tiled`; None for anything else (`auto`: picked per node).
    pub fn parse(s: &str) -> Option<Shape> {
        match s.trim() {
            "naive" => Some(Shape::Naive),
            "matvec" => Some(Shape::MatVec),
            "tiled" => Some(Shape::Tiled),
            _ => None,
        }
    }
}

/// The shape forced on this device, None for the per-node choice.
fn forced_shape(ctx: &GpuContext) -> Option<Shape> {
    match ctx.matmul_shape.load(std::sync::atomic::Ordering::Relaxed) {
        1 => Some(Shape::Naive),
        2 => Some(Shape::MatVec),
        3 => Some(Shape::Tiled),
        _ => None,
    }
}

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let a_ok = match AType::of(a.ty()) {
        Some(AType::Quant(_)) => is_quant_rows(a),
        Some(_) => indexable(a),
        None => false,
    };
    let (na, nb) = (a.ne(), b.ne());
    a_ok && matches!(b.ty(), Type::F32 | Type::F16)
        && indexable(b)
        && node.ty() == Type::F32
        && indexable(node)
        && na[0] == nb[0]
        && na[2] > 0
        && na[3] > 0
        && nb[2] % na[2] == 0
        && nb[3] % na[3] == 0
}

/// Which features a dispatch uses: the device's, for the types at hand.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Features {
    f16: bool,
    subgroup: bool,
}

impl Features {
    fn of(ctx: &GpuContext) -> Features {
        Features {
            f16: ctx.features.contains(wgpu::Features::SHADER_F16),
            subgroup: ctx.features.contains(wgpu::Features::SUBGROUP),
        }
    }
}

/// Which operands are read one vec4 per chunk (A_VEC4, B_VEC4): see [`vec4_rows`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Vec4s {
    a: bool,
    b: bool,
}

/// A float operand whose rows can be read as aligned vec4s: contiguous rows of a multiple
/// of 4 elements, every row, plane and batch (and the tensor itself inside its binding)
/// starting at a multiple of 4 elements.
fn vec4_rows(t: &Tensor, bound: &Arg) -> bool {
    let es = t.ty().type_size();
    let nb = t.nb();
    !t.ty().is_quantized()
        && nb[0] == es
        && t.ne()[0] % 4 == 0
        && nb[1..].iter().all(|&s| (s / es).is_multiple_of(4))
        && bound.elem_offset.is_multiple_of(4)
}

/// The pipeline key of `shape` for these operand types.
fn key(shape: Shape, a: AType, b_f16: bool, nc: u32, f: Features, v: Vec4s) -> PipelineKey {
    let mut k = match shape {
        Shape::Naive => return naive_key(),
        Shape::MatVec => PipelineKey::new("mul_mat_vec", "main")
            .define("WG_SIZE", MATVEC_WG)
            .define("NR", MATVEC_NR)
            .define("NC", nc),
        Shape::Tiled => PipelineKey::new("mul_mm", "main"),
    };
    k = match a {
        AType::F32 => k.flag("A_F32"),
        AType::F16 => k.flag("A_F16"),
        AType::BF16 => k.flag("A_BF16"),
        AType::Quant(flag) => k.flag("A_Q").flag(flag),
    };
    if b_f16 {
        k = k.flag("B_F16");
    }
    if v.a && !matches!(a, AType::Quant(_)) {
        k = k.flag("A_VEC4");
    }
    if v.b {
        k = k.flag("B_VEC4");
    }
    // SHADER_F16 only changes something where an operand is f16.
    if f.f16 && (a == AType::F16 || b_f16) {
        k = k.flag("F16");
        if a == AType::F16 {
            k = k.flag("A_F16_NATIVE");
            if shape == Shape::Tiled {
                k = k.flag("TILE_F16");
            }
        }
    }
    if f.subgroup && shape == Shape::MatVec {
        k = k.flag("SUBGROUP");
    }
    k
}

fn naive_key() -> PipelineKey {
    PipelineKey::new("mul_mat", "main").define("WG_SIZE", WG_ELEMENTWISE)
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut types = vec![AType::F32, AType::F16, AType::BF16];
    types.extend(Type::ALL.iter().filter(|t| t.is_quantized()).filter_map(|&t| qt_flag(t).map(AType::Quant)));
    let mut out = vec![naive_key()];
    for &a in &types {
        for b_f16 in [false, true] {
            for f16 in [false, true] {
                for subgroup in [false, true] {
                    let f = Features { f16, subgroup };
                    for (va, vb) in [(false, false), (false, true), (true, false), (true, true)] {
                        let v = Vec4s { a: va, b: vb };
                        for nc in [1, 2, 4, 8] {
                            out.push(key(Shape::MatVec, a, b_f16, nc, f, v));
                        }
                        out.push(key(Shape::Tiled, a, b_f16, 0, f, v));
                    }
                }
            }
        }
    }
    out.sort_by_key(|k| k.label());
    out.dedup();
    out
}

/// Invocations of one tiled-GEMM workgroup (8 x 8).
const TILED_WG: u32 = 64;

/// The shape a node gets: forced on the device, else mat-vec for small n. An adapter
/// whose workgroups are smaller than the GEMM's (some GL ones) gets the mat-vec kernel,
/// which takes any n.
fn shape_for(ctx: &GpuContext, node: &Tensor, a_ty: Type, b_ty: Type) -> Shape {
    let n = node.ne()[1];
    let l = &ctx.limits;
    let tiled_fits = l.max_compute_invocations_per_workgroup >= TILED_WG && l.max_compute_workgroup_size_x >= TILED_WG;
    let shape = match forced_shape(ctx) {
        Some(Shape::Naive) if a_ty == Type::F32 && b_ty == Type::F32 => Shape::Naive,
        Some(s @ (Shape::MatVec | Shape::Tiled)) => s,
        _ if n <= MATVEC_MAX_N => Shape::MatVec,
        _ => Shape::Tiled,
    };
    if shape == Shape::Tiled && !tiled_fits {
        Shape::MatVec
    } else {
        shape
    }
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let (ta, tb) = (src(node, 0)?, src(node, 1)?);
    let atype = AType::of(ta.ty()).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let a = match atype {
        AType::Quant(_) => {
            let q = qarg(ctx, ta, 1)?;
            Arg { binding: q.binding, elem_offset: q.byte_offset, layout: q.layout, nelements: q.nelements }
        }
        _ => arg(ctx, ta, 1)?,
    };
    let b = arg(ctx, tb, 2)?;
    let d = arg(ctx, node, 3)?;
    let (na, nb, nd) = (ta.ne(), tb.ne(), node.ne());
    // supports checked a.ne[2] and a.ne[3] divide b's; max(1) keeps a bad graph from
    // dividing by zero here.
    let (r2, r3) = ((nb[2] / na[2].max(1)).max(1) as u32, (nb[3] / na[3].max(1)).max(1) as u32);
    let k = na[0] as u32;
    let (m, n) = (nd[0] as u64, nd[1] as u64);
    let batches = (nd[2] * nd[3]) as u64;
    let shape = shape_for(ctx, node, ta.ty(), tb.ty());
    let b_f16 = tb.ty() == Type::F16;
    let features = Features::of(ctx);
    let v = Vec4s { a: vec4_rows(ta, &a), b: vec4_rows(tb, &b) };
    let (key, groups, blocks) = match shape {
        Shape::Naive => {
            let params = Params::header(&d, &[Some(&a), Some(&b)], d.nelements).u32s(&[k, r2, r3, 0]).finish();
            return Ok(Some(Dispatch {
                key: naive_key(),
                params,
                bindings: vec![a.binding, b.binding, d.binding],
                groups: grid_for_elements(ctx, d.nelements, WG_ELEMENTWISE)?,
            }));
        }
        Shape::MatVec => {
            let nc = (n.max(1) as u32).next_power_of_two().min(MATVEC_MAX_N as u32);
            let blocks = [m.div_ceil(MATVEC_NR as u64), n.div_ceil(nc as u64)];
            (key(shape, atype, b_f16, nc, features, v), blocks[0] * blocks[1] * batches, blocks)
        }
        Shape::Tiled => {
            let blocks = [m.div_ceil(TILE as u64), n.div_ceil(TILE as u64)];
            (key(shape, atype, b_f16, 0, features, v), blocks[0] * blocks[1] * batches, blocks)
        }
    };
    let count = u32::try_from(groups)
        .map_err(|_| Error::unsupported(format!("{}: MUL_MAT needs {groups} workgroups", ctx.name)))?;
    let params = Params::header(&d, &[Some(&a), Some(&b)], count)
        .u32s(&[k, r2, r3, blocks[0] as u32, blocks[1] as u32, 0, 0, 0])
        .finish();
    Ok(Some(Dispatch { key, params, bindings: vec![a.binding, b.binding, d.binding], groups: grid(ctx, groups)? }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_mask_features_to_the_types_that_use_them() {
        let all = Features { f16: true, subgroup: true };
        let (no, yes) = (Vec4s { a: false, b: false }, Vec4s { a: true, b: true });
        let k = key(Shape::Tiled, AType::F32, false, 0, all, no);
        assert_eq!(k.label(), "mul_mm:main[A_F32]");
        let k = key(Shape::Tiled, AType::F16, false, 0, all, yes);
        assert_eq!(k.label(), "mul_mm:main[A_F16,A_F16_NATIVE,A_VEC4,B_VEC4,F16,TILE_F16]");
        let k = key(Shape::MatVec, AType::BF16, true, 4, all, no);
        assert_eq!(k.label(), "mul_mat_vec:main[A_BF16,B_F16,F16,NC=4,NR=4,SUBGROUP,WG_SIZE=64]");
        let none = Features { f16: false, subgroup: false };
        let k = key(Shape::MatVec, AType::F16, false, 1, none, no);
        assert_eq!(k.label(), "mul_mat_vec:main[A_F16,NC=1,NR=4,WG_SIZE=64]");
        // Quantized a is read through dq4, never as vec4s of elements.
        let k = key(Shape::MatVec, AType::Quant("QT_Q4_0"), false, 1, none, yes);
        assert_eq!(k.label(), "mul_mat_vec:main[A_Q,B_VEC4,NC=1,NR=4,QT_Q4_0,WG_SIZE=64]");
    }
}
