//! MUL_MAT_ID (mixture of experts): for each token t and slot e, the expert ids[e, t]'s
//! matrix times b's row (e % b.ne[1], t): dst[:, e, t] = as[:, :, ids[e, t]] . b[:, e % n_b, t].
//!
//! As in ggml, rows are grouped by expert so each expert matrix is read once, and b is first
//! rounded to the experts' "vec dot" type (f16 for f16 experts, bf16 for bf16); the dot
//! products are MUL_MAT's. Expert ids outside 0..n_expert are an error, not a stray read.

use super::matmul::{dot, packed_f32, packed_f32_rows};
use super::{is_float, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b), Some(ids)) = (node.src(0), node.src(1), node.src(2)) else {
        return false;
    };
    is_float(a.ty()) && is_float(b.ty()) && ids.ty() == Type::I32 && node.ty() == Type::F32
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
    let bf = packed_f32(&b, a.ty, cx);
    let n_b = b.n(1);
    let blocks = m.div_ceil(ROWS_PER_TASK);
    for (e, group) in groups.iter().enumerate() {
        if group.is_empty() {
            continue;
        }
        // Expert e is rows e*m .. (e+1)*m of `as` (which is 3-D).
        let ae = packed_f32_rows(&a, e * m..(e + 1) * m, Type::F32, cx);
        cx.par_ranges(group.len() * blocks, 1, |tasks| {
            for task in tasks {
                let (slot, token) = group[task / blocks];
                let r0 = (task % blocks) * ROWS_PER_TASK;
                let b_row = (token * n_b + slot % n_b) * k;
                let brow = &bf[b_row..b_row + k];
                for i0 in r0..(r0 + ROWS_PER_TASK).min(m) {
                    let v = dot(&ae[i0 * k..(i0 + 1) * k], brow);
                    // SAFETY: (i0, slot, token) is inside dst [m, n_used, n_tokens]; each
                    // (slot, token) belongs to one expert, so no two tasks write it.
                    unsafe { (d.at(i0, slot, token, 0) as *mut f32).write_unaligned(v) };
                }
            }
        });
    }
    Ok(())
}
