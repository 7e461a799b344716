//! GET_ROWS: gather rows of src0 by the i32 indices in src1 (which may be 3-D: the
//! indices at (i10, i11, i12) pick row i01 of src0's slice (i11, i12)).

use super::{is_plain, src};
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
    is_plain(a.ty()) && b.ty() == Type::I32
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let n0 = a.n(0);
    let n_a_rows = a.n(1);
    let same = a.ty == d.ty;
    let esize = a.ty.type_size();
    // Rows of dst = elements of b, in b's order.
    cx.try_par_ranges(b.nelements(), (4096 / n0.max(1)).max(1), |range| {
        let mut buf = vec![0f32; n0];
        for k in range {
            let (i10, i11, i12) = (k % b.n(0), (k / b.n(0)) % b.n(1), k / (b.n(0) * b.n(1)));
            // SAFETY: (i10, i11, i12) inside b; the row index is checked before use.
            unsafe {
                let row = (b.at(i10, i11, i12, 0) as *const i32).read_unaligned();
                if row < 0 || row as usize >= n_a_rows {
                    return Err(Error::invalid(format!(
                        "getRows: row index {row} at b[{i10},{i11},{i12}] is outside a.ne[1]={n_a_rows}"
                    )));
                }
                let r = row as usize;
                if same && a.rows_packed() && d.rows_packed() {
                    std::ptr::copy_nonoverlapping(a.row_ptr(r, i11, i12), d.row_ptr(i10, i11, i12), n0 * esize);
                } else {
                    a.load_row(r, i11, i12, &mut buf);
                    d.store_row(i10, i11, i12, &buf);
                }
            }
        }
        Ok(())
    })
}
