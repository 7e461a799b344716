//! DUP, CPY, CONT: copy elements in logical (row-major) order from src0 into the node's
//! memory, converting the type. Shapes may differ as long as the element counts match.

use super::{is_plain, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    node.src(0).is_some_and(|s| is_plain(s.ty())) && is_plain(node.ty())
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    if s.ne[0] == d.ne[0] {
        copy_rows(&s, &d, cx);
    } else {
        copy_elements(&s, &d, cx);
    }
    Ok(())
}

/// Same row length: row k of src is row k of dst in flat order.
fn copy_rows(s: &TData, d: &TData, cx: &Cx) {
    let n0 = s.n(0);
    let same = s.ty == d.ty;
    let esize = s.ty.type_size();
    cx.par_ranges(s.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        let mut buf = vec![0f32; if same { 0 } else { n0 }];
        for ir in rows {
            let (s1, s2, s3) = s.row_coords(ir);
            let (d1, d2, d3) = d.row_coords(ir);
            // SAFETY: row indices come from each tensor's own shape.
            unsafe {
                if same && s.rows_packed() && d.rows_packed() {
                    std::ptr::copy(s.row_ptr(s1, s2, s3), d.row_ptr(d1, d2, d3), n0 * esize);
                } else if same {
                    for i0 in 0..n0 {
                        std::ptr::copy(s.at(i0, s1, s2, s3), d.at(i0, d1, d2, d3), esize);
                    }
                } else {
                    s.load_row(s1, s2, s3, &mut buf);
                    d.store_row(d1, d2, d3, &buf);
                }
            }
        }
    });
}

/// Different row lengths: walk flat element indices.
fn copy_elements(s: &TData, d: &TData, cx: &Cx) {
    let n = s.nelements();
    let same = s.ty == d.ty;
    let esize = s.ty.type_size();
    let coords = |t: &TData, i: usize| {
        let (n0, n1, n2) = (t.n(0), t.n(1), t.n(2));
        (i % n0, (i / n0) % n1, (i / (n0 * n1)) % n2, i / (n0 * n1 * n2))
    };
    cx.par_ranges(n, 4096, |range| {
        for i in range {
            let (a0, a1, a2, a3) = coords(s, i);
            let (b0, b1, b2, b3) = coords(d, i);
            // SAFETY: coordinates come from each tensor's own shape.
            unsafe {
                if same {
                    std::ptr::copy(s.at(a0, a1, a2, a3), d.at(b0, b1, b2, b3), esize);
                } else {
                    d.set_f32(b0, b1, b2, b3, s.get_f32(a0, a1, a2, a3));
                }
            }
        }
    });
}
