//! DIAG_MASK_INF and DIAG_MASK_ZERO: in every matrix (dims 0 and 1) the elements with
//! column i0 > n_past + row i1 become -inf (or 0); the rest are copied (or left, in place).

use super::gather::map_f32;
use super::{is_float, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    // ggml has f32 only; f16 and bf16 hold -inf and 0 as well, so they work the same.
    is_float(node.ty()) && node.src(0).is_some_and(|s| s.ty() == node.ty())
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let (n_past, value) = match node.op() {
        Op::DiagMaskInf { n_past } => (n_past, f32::NEG_INFINITY),
        Op::DiagMaskZero { n_past } => (n_past, 0.0),
        _ => return Ok(()),
    };
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    // n_past >= 0 is checked by the constructor; columns up to n_past + row stay.
    let n_past = n_past.max(0) as usize;
    map_f32(cx, &s, &d, |i, x| if i[0] > n_past + i[1] { value } else { x });
    Ok(())
}
