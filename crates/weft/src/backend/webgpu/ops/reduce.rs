//! SUM (f32, f16, bf16: the sum rounded to the source type), SUM_ROWS and MEAN (f32) and
//! COUNT_EQUAL (i32 -> i64): sum.wgsl, sum_rows.wgsl, count_equal.wgsl, every layout.
//! SUM and COUNT_EQUAL are one workgroup over the whole tensor; SUM_ROWS and MEAN one per
//! row. Sums are f32 (see sum.wgsl for why not ggml's f64).

use super::{bind_node, grid, indexable, is_f32, src, Dispatch, Kernel, Params, WG_ELEMENTWISE, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const SUM: Kernel = Kernel { supports: supports_sum, plan: plan_sum };
pub const SUM_ROWS: Kernel = Kernel { supports: supports_sum_rows, plan: plan_sum_rows };
pub const COUNT_EQUAL: Kernel = Kernel { supports: supports_count_equal, plan: plan_count_equal };

/// A float type a shader reads through load_a.wgsl, with the flag that selects it.
pub fn load_a_flag(ty: Type) -> Option<Option<&'static str>> {
    match ty {
        Type::F32 => Some(None),
        Type::F16 => Some(Some("A_F16")),
        Type::BF16 => Some(Some("A_BF16")),
        _ => None,
    }
}

/// `key` reading `a` of type `ty` through load_a.wgsl.
pub fn with_load_a(key: PipelineKey, ty: Type) -> PipelineKey {
    match load_a_flag(ty).flatten() {
        Some(f) => key.flag(f),
        None => key,
    }
}

fn supports_sum(node: &Tensor) -> bool {
    matches!(node.op(), Op::Sum)
        && load_a_flag(node.ty()).is_some()
        && indexable(node)
        && node.src(0).is_some_and(|s| s.ty() == node.ty() && indexable(s))
}

fn sum_key(ty: Type) -> PipelineKey {
    let k = with_load_a(PipelineKey::new("sum", "main").define("WG_SIZE", WG_ELEMENTWISE), ty);
    if ty == Type::F32 {
        k
    } else {
        k.flag("DST_HALF")
    }
}

fn plan_sum(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a], d) = bind_node(ctx, node)?;
    let params = Params::header(&d, &[Some(&a)], a.nelements).finish();
    Ok(Some(Dispatch { key: sum_key(node.ty()), params, bindings: vec![a.binding, d.binding], groups: [1, 1, 1] }))
}

fn supports_sum_rows(node: &Tensor) -> bool {
    matches!(node.op(), Op::SumRows | Op::Mean) && is_f32(Some(node)) && is_f32(node.src(0))
}

fn sum_rows_key(mean: bool) -> PipelineKey {
    let k = PipelineKey::new("sum_rows", "main").define("WG_SIZE", WG_ROWS);
    if mean {
        k.flag("MEAN")
    } else {
        k
    }
}

fn plan_sum_rows(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a], d) = bind_node(ctx, node)?;
    let rows = src(node, 0)?.nrows() as u32;
    let params = Params::header(&d, &[Some(&a)], rows).finish();
    Ok(Some(Dispatch {
        key: sum_rows_key(matches!(node.op(), Op::Mean)),
        params,
        bindings: vec![a.binding, d.binding],
        groups: grid(ctx, rows as u64)?,
    }))
}

fn supports_count_equal(node: &Tensor) -> bool {
    let i32_ok = |t: Option<&Tensor>| t.is_some_and(|t| t.ty() == Type::I32 && indexable(t));
    matches!(node.op(), Op::CountEqual)
        && node.ty() == Type::I64
        && indexable(node)
        && i32_ok(node.src(0))
        && i32_ok(node.src(1))
}

fn count_equal_key() -> PipelineKey {
    PipelineKey::new("count_equal", "main").define("WG_SIZE", WG_ELEMENTWISE)
}

fn plan_count_equal(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([a, b], d) = bind_node(ctx, node)?;
    let params = Params::header(&d, &[Some(&a), Some(&b)], a.nelements).finish();
    Ok(Some(Dispatch {
        key: count_equal_key(),
        params,
        bindings: vec![a.binding, b.binding, d.binding],
        groups: [1, 1, 1],
    }))
}

/// Every variant this module compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v: Vec<PipelineKey> = [Type::F32, Type::F16, Type::BF16].into_iter().map(sum_key).collect();
    v.extend([sum_rows_key(false), sum_rows_key(true), count_equal_key()]);
    v
}
