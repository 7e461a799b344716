//! MUL_MAT_ID (mixture of experts): for each token t and slot e, the expert ids[e, t]'s
//! matrix times b's row (e % b.ne[1], t): dst[:, e, t] = as[:, :, ids[e, t]] . b[:, e % n_b, t].
//!
//! As in ggml, rows are grouped by expert so each expert matrix is read once, and b is first
//! rounded to the experts' "vec dot" type (f16 for f16 experts, bf16 for bf16, q8_0 / q8_1 /
//! q8_K for quantized experts); the dot products are MUL_MAT's (`matmul_float`'s SIMD row
//! dots on the expert rows where they lie, `matmul_quant`'s vector `vec_dot` for quantized
//! experts, and its quantized GEMM for an expert that `GEMM_MIN_COLS` or more (slot, token)
//! pairs use: ggml takes one vec_dot per output there). Expert ids outside 0..n_expert are an
//! error, not a stray read.

use super::matmul::{dot, packed_f32, packed_f32_rows};
use super::matmul_float::BRows;
use super::matmul_quant::{self, DotRows};
use super::{is_float, is_quant_rows, src};
use crate::backend::cpu::float_simd::{kernels, Elem};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::simd::gemm::{PackedB, QuantGemm};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::{quant, Type};
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b), Some(ids)) = (node.src(0), node.src(1), node.src(2)) else {
        return false;
    };
    let ab = (is_float(a.ty()) && is_float(b.ty())) || (is_quant_rows(a) && matmul_quant::b_supported(a.ty(), b));
    ab && ids.ty() == Type::I32 && node.ty() == Type::F32
}

/// dst rows computed per task: enough work per task, and several tasks even for one token.
const ROWS_PER_TASK: usize = 64;

/// For each expert, the (slot, token) pairs that use it, in ggml's order (token-major).
fn group_by_expert(ids: &TData, n_expert: usize) -> Result<Vec<Vec<(usize, usize)>>> {
    let mut groups = vec![Vec::new(); n_expert];
    for token in 0..ids.n(1) {
        for slot in 0..ids.n(0) {
            // SAFETY: (slot, token) is inside ids' shape.
            let e = unsafe { (ids.at(slot, token, 0, 0) as *const i32).read_unaligned() };
            let group = usize::try_from(e).ok().and_then(|e| groups.get_mut(e)).ok_or_else(|| {
                Error::invalid(format!(
                    "mulMatId: expert id {e} at ids[{slot},{token}] is outside 0..{n_expert} (as.ne[2])"
                ))
            })?;
            group.push((slot, token));
        }
    }
    Ok(groups)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let ids = src(node, 2)?;
    let d = TData::of(node)?;
    let (k, m, n_expert) = (a.n(0), a.n(1), a.n(2));
    let groups = group_by_expert(&ids, n_expert)?;
    let used = groups.iter().enumerate().filter(|(_, g)| !g.is_empty());
    if a.ty.is_quantized() {
        // b's rows converted once to the experts' vec_dot type; expert rows are dotted as
        // stored, or decoded once by the GEMM for an expert that many tokens use.
        let rows = DotRows::new(a.ty, &b, cx)?;
        for (e, group) in used {
            if let Some(gemm) = matmul_quant::gemm_for(a.ty, group.len()) {
                expert_gemm(&gemm, &a, e, &rows, &d, group, b.n(1), cx)?;
                continue;
            }
            // SAFETY: row (i0, e) of `as` [k, m, n_expert] exists for i0 < m; b_row < b's rows.
            expert_rows(cx, &d, group, m, b.n(1), |i0, b_row| Ok(unsafe { rows.dot(a.row_ptr(i0, e, 0), b_row) }))?;
        }
    } else if let (Some(elem), true) = (Elem::of(a.ty), a.rows_packed()) {
        // b's rows in the experts' type; expert rows dotted where they lie.
        let rows = BRows::new(&b, elem, elem, cx);
        let dot = kernels().dot(elem);
        for (e, group) in used {
            expert_rows(cx, &d, group, m, b.n(1), |i0, b_row| {
                let mut v = 0f32;
                // SAFETY: row (i0, e) of `as` holds k elements of its type; b_row < b's rows.
                unsafe { dot(k, a.row_ptr(i0, e, 0), 0, 1, rows.flat_row(b_row), &mut v) };
                Ok(v)
            })?;
        }
    } else {
        let bf = packed_f32(&b, a.ty, cx);
        for (e, group) in used {
            // Expert e is rows e*m .. (e+1)*m of `as` (which is 3-D).
            let ae = packed_f32_rows(&a, e * m..(e + 1) * m, Type::F32, cx);
            expert_rows(cx, &d, group, m, b.n(1), |i0, b_row| {
                Ok(dot(&ae[i0 * k..(i0 + 1) * k], &bf[b_row * k..(b_row + 1) * k]))
            })?;
        }
    }
    Ok(())
}

/// One expert's outputs by MUL_MAT's quantized GEMM: the group's b rows (already converted)
/// packed as the GEMM's columns, in the group's order, each column's outputs stored at its
/// (slot, token).
#[allow(clippy::too_many_arguments)]
fn expert_gemm(
    gemm: &QuantGemm,
    a: &TData,
    e: usize,
    rows: &DotRows,
    d: &TData,
    group: &[(usize, usize)],
    n_b: usize,
    cx: &Cx,
) -> Result<()> {
    let (k, m) = (a.n(0), a.n(1));
    let b_row = |c: usize| group[c].1 * n_b + group[c].0 % n_b;
    let fill = |c: usize, out: &mut [u8]| {
        out.copy_from_slice(rows.row(b_row(c)));
        Ok(())
    };
    let packed = PackedB::new(quant::vec_dot_type(a.ty), k, group.len(), gemm.nr(), &fill, cx)?;
    let a_row_size = a.ty.row_size(k);
    // SAFETY: row (i0, e) of `as` [k, m, n_expert] is a row of packed blocks (supports).
    let a_row = |i0: usize| unsafe { std::slice::from_raw_parts(a.row_ptr(i0, e, 0), a_row_size) };
    // SAFETY: dst [m, n_used, n_tokens] is f32 with rows contiguous; each (slot, token)
    // belongs to one expert and the GEMM hands each output run to one task.
    let store = |c: usize, i0: usize, v: &[f32]| unsafe {
        let (slot, token) = group[c];
        std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, d.at(i0, slot, token, 0), 4 * v.len())
    };
    gemm.run(m, group.len(), k, &a_row, &packed, &store, cx)
}

/// dst[i0, slot, token] = dot(i0, b row of (slot, token)) for every (slot, token) of one
/// expert's group and every row i0 < m, split over (pair, block of rows) tasks. `dot` gets
/// the expert row and b's flat row index (b is [k, n_b, n_tokens]; slot wraps over n_b).
fn expert_rows<F>(cx: &Cx, d: &TData, group: &[(usize, usize)], m: usize, n_b: usize, dot: F) -> Result<()>
where
    F: Fn(usize, usize) -> Result<f32> + Sync,
{
    let blocks = m.div_ceil(ROWS_PER_TASK);
    cx.try_par_ranges(group.len() * blocks, 1, |tasks| {
        for task in tasks {
            let (slot, token) = group[task / blocks];
            let r0 = (task % blocks) * ROWS_PER_TASK;
            let b_row = token * n_b + slot % n_b;
            for i0 in r0..(r0 + ROWS_PER_TASK).min(m) {
                let v = dot(i0, b_row)?;
                // SAFETY: (i0, slot, token) is inside dst [m, n_used, n_tokens]; each
                // (slot, token) belongs to one expert, so no two tasks write it.
                unsafe { (d.at(i0, slot, token, 0) as *mut f32).write_unaligned(v) };
            }
        }
        Ok(())
    })
}
