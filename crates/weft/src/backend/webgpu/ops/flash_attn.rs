//! FLASH_ATTN_EXT: flash_attn.wgsl, one workgroup per [`q_rows`] query rows of one head and
//! batch, with an online softmax over chunks of WG_ROWS keys. q f32 or f16; K and V f16 or one
//! block type of dequant.wgsl (both the same type, read through its `dq4`); optional f16 mask;
//! ALiBi; logit softcap. Head sizes: multiples of 4 (of the block size for quantized K/V) up to
//! 4 * WG_ROWS * MAX_ACC_N.

use super::quant::{byte_addressable, qarg, qt_flag};
use super::{arg, grid, indexable, src, Dispatch, Kernel, Params, WG_ROWS};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::{alibi_bases, Op};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

/// Output vec4 groups per invocation: head sizes up to 4 * WG_ROWS * MAX_ACC_N (512).
const MAX_ACC_N: u32 = 2;

/// The K/V element types this kernel reads and the flag selecting each.
fn kv_flag(ty: Type) -> Option<&'static str> {
    match ty {
        Type::F16 => Some("KV_F16"),
        // llama.cpp's quantized KV cache types, whose blocks are 32 elements.
        Type::Q4_0 | Type::Q4_1 | Type::Q5_0 | Type::Q5_1 | Type::Q8_0 | Type::IQ4_NL => qt_flag(ty),
        _ => None,
    }
}

fn supports(node: &Tensor) -> bool {
    let (Some(q), Some(k), Some(v)) = (node.src(0), node.src(1), node.src(2)) else {
        return false;
    };
    let d = q.ne()[0] as u64;
    let blck = k.ty().blck_size() as u64;
    let q_ok = matches!(q.ty(), Type::F32 | Type::F16) && indexable(q);
    // K and V rows are packed (the constructor checks it); heads and rows fit u32 bytes.
    let kv_ok = |t: &Tensor| byte_addressable(t) && t.nb()[0] == t.ty().type_size();
    let mask_ok = node.src(3).is_none_or(|m| m.ty() == Type::F16 && indexable(m));
    matches!(node.op(), Op::FlashAttnExt { .. })
        && node.ty() == Type::F32
        && indexable(node)
        && q_ok
        && k.ty() == v.ty()
        && kv_flag(k.ty()).is_some()
        && kv_ok(k)
        && kv_ok(v)
        && mask_ok
        && d > 0
        && d.is_multiple_of(4)
        && d.is_multiple_of(blck)
        && d <= 4 * (WG_ROWS * MAX_ACC_N) as u64
}

/// Output vec4 groups per invocation and query row for head size `d`.
fn acc_n(d: u32) -> u32 {
    d.div_ceil(4 * WG_ROWS).clamp(1, MAX_ACC_N)
}

/// Query rows per workgroup: each K and V row read serves that many rows. Eight (four for
/// head sizes over 256) keep the workgroup's queries, scores, weights and partial maxima
/// under 13 KiB of workgroup memory (WebGPU guarantees 16) and its accumulators at eight
/// vec4s an invocation; one for a single query row (decoding), where more rows would only be
/// skipped.
/// Lavapipe (2 cores), nh = 32, kv = 1024, nb = 35, ms a compute, rows a workgroup 1 / 2 /
/// 4 / 8: hs = 256 q4_0 K/V 1900 / 1515 / 1150 / 1100, hs = 128 f16 1440 / 1171 / 854 / 828.
fn q_rows(nq1: u32, d: u32) -> u32 {
    if nq1 <= 1 {
        1
    } else {
        8 / acc_n(d)
    }
}

fn key(q: Type, kv: Type, mask: bool, d: u32, nq1: u32) -> PipelineKey {
    let (acc_n, q_rows) = (acc_n(d), q_rows(nq1, d));
    let mut k = PipelineKey::new("flash_attn", "main")
        .define("WG_SIZE", WG_ROWS)
        .define("ACC_N", acc_n)
        .define("Q4_LEN", acc_n * WG_ROWS)
        .define("Q_ROWS", q_rows)
        .define("ACC_ROWS", q_rows * acc_n)
        .define("QUERY_LEN", q_rows * acc_n * WG_ROWS)
        .define("SCORE_LEN", q_rows * WG_ROWS)
        .define("SLICES", WG_ROWS / q_rows);
    if q == Type::F16 {
        k = k.flag("Q_F16");
    }
    if mask {
        k = k.flag("MASK");
    }
    match kv_flag(kv) {
        Some("KV_F16") => k.flag("KV_F16"),
        Some(qt) => k.flag("KV_QUANT").flag(qt),
        None => k,
    }
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let kv_types = [Type::F16, Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0, Type::IQ4_NL];
    let mut v = Vec::new();
    for kv in kv_types.into_iter().filter(|&t| kv_flag(t).is_some()) {
        for q in [Type::F32, Type::F16] {
            for mask in [false, true] {
                for d in [4 * WG_ROWS, 4 * WG_ROWS * MAX_ACC_N] {
                    for nq1 in [1, 2] {
                        v.push(key(q, kv, mask, d, nq1));
                    }
                }
            }
        }
    }
    v
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let Op::FlashAttnExt { scale, max_bias, logit_softcap, .. } = node.op() else {
        return Err(crate::backend::unsupported("WebGPU", node));
    };
    let (qt, kt, vt) = (src(node, 0)?, src(node, 1)?, src(node, 2)?);
    let q = arg(ctx, qt, 1)?;
    let k = qarg(ctx, kt, 2)?;
    let v = qarg(ctx, vt, 3)?;
    let mask = node.src(3).map(|m| arg(ctx, m, 4)).transpose()?;
    let d = arg(ctx, node, 5)?;
    let (qn, kn) = (qt.ne(), kt.ne());
    let (d_head, nq1) = (qn[0] as u32, qn[1] as u32);
    let tiles = nq1.div_ceil(q_rows(nq1, d_head)) as u64 * qn[2] as u64 * qn[3] as u64;
    let tiles = u32::try_from(tiles).map_err(|_| crate::backend::unsupported("WebGPU", node))?;
    let (m0, m1, n_head_log2) = alibi_bases(max_bias, qn[2] as u32);
    // With a softcap the scale applies inside the tanh, as on the CPU.
    let scale = if logit_softcap != 0.0 { scale / logit_softcap } else { scale };
    let zero = [0u32; 8];
    let params = Params::default()
        .u32s(&d.layout)
        .u32s(&q.layout)
        .u32s(&k.layout)
        .u32s(&v.layout)
        .u32s(mask.as_ref().map_or(&zero, |m| &m.layout))
        .u32s(&[d.elem_offset, q.elem_offset, mask.as_ref().map_or(0, |m| m.elem_offset), tiles])
        .u32s(&[
            k.byte_offset,
            v.byte_offset,
            (qn[2] / kn[2].max(1)).max(1) as u32,
            (qn[3] / kn[3].max(1)).max(1) as u32,
        ])
        .f32s(&[scale, logit_softcap, max_bias, m0, m1])
        .u32s(&[n_head_log2])
        .finish();
    let mut bindings = vec![q.binding, k.binding, v.binding];
    bindings.extend(mask.map(|m| m.binding));
    bindings.push(d.binding);
    Ok(Some(Dispatch {
        key: key(qt.ty(), kt.ty(), node.src(3).is_some(), d_head, nq1),
        params,
        bindings,
        groups: grid(ctx, tiles as u64)?,
    }))
}
