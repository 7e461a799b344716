//! GET_ROWS: gather rows of src0 by the i32 indices in src1 (which may be 3-D: the
//! indices at (i10, i11, i12) pick row i01 of src0's slice (i11, i12)). Rows of the result's
//! own type are copied bytewise (f32, i32: exact, as ggml's memcpy); other plain types
//! (f16, bf16, ...) are widened to the f32 result and quantized rows dequantized into it
//! (ggml's get_rows_q).

use super::copy::convert_row;
use super::{is_plain, is_quant_rows, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    (is_plain(a.ty()) || is_quant_rows(a)) && b.ty() == Type::I32 && is_plain(node.ty())
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let n0 = a.n(0);
    let n_a_rows = a.n(1);
    // Rows of dst = elements of b, in b's order.
    cx.try_par_ranges(b.nelements(), (4096 / n0.max(1)).max(1), |range| {
        let mut buf = vec![0f32; n0];
        for k in range {
            let (i10, i11, i12) = (k % b.n(0), (k / b.n(0)) % b.n(1), k / (b.n(0) * b.n(1)));
            // SAFETY: (i10, i11, i12) inside b; the row index is checked before use, and
            // (i11, i12) is inside a's dims 2 and 3 (constructor: a.ne[2] == b.ne[1],
            // a.ne[3] >= b.ne[2]).
            unsafe {
                let row = (b.at(i10, i11, i12, 0) as *const i32).read_unaligned();
                if row < 0 || row as usize >= n_a_rows {
                    return Err(Error::invalid(format!(
                        "getRows: row index {row} at b[{i10},{i11},{i12}] is outside a.ne[1]={n_a_rows}"
                    )));
                }
                convert_row(&a, (row as usize, i11, i12), &d, (i10, i11, i12), &mut buf)?;
            }
        }
        Ok(())
    })
}
