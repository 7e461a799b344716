//! The recurrent-model ops, f32: SSM_CONV (one invocation per element of the result),
//! SSM_SCAN (one per channel and sequence) and RWKV_WKV (one per sequence, head and value
//! channel), each running its recurrence over the tokens in the CPU backend's order:
//! ssm_conv.wgsl, ssm_scan.wgsl, rwkv_wkv.wgsl. SSM_SCAN and RWKV_WKV bind six sources
//! and the result (seven storage buffers, within WebGPU's default of eight).

use super::{arg, bind_node, grid_for_elements, is_f32, src, Arg, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::{Error, Result};

pub const SSM_CONV: Kernel = Kernel { supports: ssm_conv_supports, plan: ssm_conv_plan };
pub const SSM_SCAN: Kernel = Kernel { supports: ssm_scan_supports, plan: ssm_scan_plan };
pub const RWKV_WKV: Kernel = Kernel { supports: rwkv_wkv_supports, plan: rwkv_wkv_plan };

#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    ["ssm_conv", "ssm_scan", "rwkv_wkv"].into_iter().map(key).collect()
}

fn key(shader: &'static str) -> PipelineKey {
    PipelineKey::new(shader, "main").define("WG_SIZE", WG_ELEMENTWISE)
}

/// Sources 0..6 all present and f32.
fn six_f32(node: &Tensor) -> Option<[&Tensor; 6]> {
    let s: Vec<&Tensor> = (0..6).map_while(|i| node.src(i).filter(|t| is_f32(Some(*t)))).collect();
    s.try_into().ok()
}

fn u(v: i64) -> u32 {
    v as u32
}

// ---- SSM_CONV ----

fn ssm_conv_supports(node: &Tensor) -> bool {
    let (Some(sx), Some(c)) = (node.src(0), node.src(1)) else { return false };
    let (sn, cn, dn) = (sx.ne(), c.ne(), node.ne());
    matches!(node.op(), Op::SsmConv)
        && is_f32(Some(node))
        && is_f32(Some(sx))
        && is_f32(Some(c))
        // dst [d_inner, n_t, n_s] reads sx [d_conv - 1 + n_t, d_inner, n_s], c [d_conv, d_inner].
        && (dn[1] == 0 || sn[0] >= cn[0] - 1 + dn[1])
        && sn[1] >= dn[0]
        && cn[1] >= dn[0]
        && sn[2] >= dn[2]
        && dn[3] == 1
}

fn ssm_conv_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let ([sx, c], d) = bind_node(ctx, node)?;
    let n = d.nelements;
    Ok(Some(Dispatch {
        key: key("ssm_conv"),
        params: Params::header(&d, &[Some(&sx), Some(&c)], n).finish(),
        bindings: vec![sx.binding, c.binding, d.binding],
        groups: grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
    }))
}

// ---- SSM_SCAN ----

/// (d_state, d_inner, n_seq_tokens, n_seqs) when the shapes are the constructor's.
fn ssm_scan_dims(node: &Tensor) -> Option<[i64; 4]> {
    let [s, x, dt, a, b, c] = six_f32(node)?;
    let (d_state, d_inner, n_t, n_s) = (s.ne()[0], s.ne()[1], x.ne()[1], s.ne()[2]);
    let ok = matches!(node.op(), Op::SsmScan)
        && is_f32(Some(node))
        && node.is_contiguous()
        && s.ne()[3] == 1
        && x.ne() == [d_inner, n_t, n_s, 1]
        && dt.same_shape(x)
        && a.ne()[0] >= d_state
        && a.ne()[1] >= d_inner
        && b.ne()[..3] == [d_state, n_t, n_s]
        && c.ne()[..3] == [d_state, n_t, n_s]
        && node.nelements() == x.nelements() + s.nelements();
    ok.then_some([d_state, d_inner, n_t, n_s])
}

fn ssm_scan_supports(node: &Tensor) -> bool {
    ssm_scan_dims(node).is_some()
}

/// Sources 0..6 bound at @binding(1..=6), the result at 7.
fn bind_six(ctx: &GpuContext, node: &Tensor) -> Result<([Arg; 6], Arg)> {
    let srcs: Vec<Arg> = (0..6).map(|i| arg(ctx, src(node, i)?, i as u32 + 1)).collect::<Result<_>>()?;
    let srcs = srcs.try_into().map_err(|_| Error::invalid("WebGPU: source count"))?;
    Ok((srcs, arg(ctx, node, 7)?))
}

fn ssm_scan_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let dims = ssm_scan_dims(node).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let (srcs, d) = bind_six(ctx, node)?;
    let count = u(dims[1] * dims[3]);
    let mut params = Params::default();
    for s in &srcs {
        params = params.u32s(&s.layout);
    }
    let [s, x, dt, a, b, c] = srcs;
    let params = params
        .u32s(&[d.elem_offset, s.elem_offset, x.elem_offset, dt.elem_offset])
        .u32s(&[a.elem_offset, b.elem_offset, c.elem_offset, count])
        .u32s(&dims.map(u))
        .finish();
    Ok(Some(Dispatch {
        key: key("ssm_scan"),
        params,
        bindings: [s, x, dt, a, b, c, d].into_iter().map(|t| t.binding).collect(),
        groups: grid_for_elements(ctx, count, WG_ELEMENTWISE)?,
    }))
}

// ---- RWKV_WKV ----

/// (S, H, n_tokens, n_seqs) when the shapes are the constructor's and every tensor packed.
fn rwkv_dims(node: &Tensor) -> Option<[i64; 4]> {
    let [k, v, r, tf, td, state] = six_f32(node)?;
    let (s, h, n_tokens, n_seqs) = (k.ne()[0], k.ne()[2], k.ne()[3], state.ne()[1]);
    let c = s * h;
    let ok = matches!(node.op(), Op::RwkvWkv)
        && is_f32(Some(node))
        && [node, k, v, r, tf, td, state].iter().all(|t| t.is_contiguous())
        && k.ne()[1] == 1
        && [v, r, td].iter().all(|t| t.ne() == [1, s, h, n_tokens])
        && tf.nelements() >= c
        && state.nelements() == s * c * n_seqs
        && n_seqs > 0
        && n_tokens % n_seqs == 0
        && node.nelements() == c * (n_tokens + s * n_seqs);
    ok.then_some([s, h, n_tokens, n_seqs])
}

fn rwkv_wkv_supports(node: &Tensor) -> bool {
    rwkv_dims(node).is_some()
}

fn rwkv_wkv_plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let dims = rwkv_dims(node).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let ([k, v, r, tf, td, state], d) = bind_six(ctx, node)?;
    let count = u(dims[3] * dims[1] * dims[0]);
    let params = Params::default()
        .u32s(&[d.elem_offset, k.elem_offset, v.elem_offset, r.elem_offset])
        .u32s(&[tf.elem_offset, td.elem_offset, state.elem_offset, count])
        .u32s(&dims.map(u))
        .finish();
    Ok(Some(Dispatch {
        key: key("rwkv_wkv"),
        params,
        bindings: [k, v, r, tf, td, state, d].into_iter().map(|t| t.binding).collect(),
        groups: grid_for_elements(ctx, count, WG_ELEMENTWISE)?,
    }))
}
