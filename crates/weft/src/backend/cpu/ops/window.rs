//! SET and ACC: b written (SET) or added (ACC) into a window of a copy of a. The window has
//! b's shape, a's element size as its element stride, the strides nb1..nb3 and a byte
//! offset from the op params. The copy of a is skipped when dst is a's memory (the in-place
//! variants, or an allocator that placed dst over a).

use super::gather::{copy_elem, rows_disjoint, rows_per_task};
use super::{is_plain, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::{read_f32, write_f32, TData};
use crate::op::Op;
use crate::tensor::span_bytes;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::{ensure, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let same = node.ty() == a.ty() && b.ty() == a.ty();
    match node.op() {
        // SET copies bytes, so any plain type works; ggml's kernel has f32 only.
        Op::Set { .. } => same && is_plain(a.ty()),
        _ => same && a.ty() == Type::F32,
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let (nb1, nb2, nb3, offset, add) = match node.op() {
        Op::Set { nb1, nb2, nb3, offset, .. } => (nb1, nb2, nb3, offset, false),
        Op::Acc { nb1, nb2, nb3, offset, .. } => (nb1, nb2, nb3, offset, true),
        _ => return Ok(()),
    };
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let es = a.ty.type_size();
    // The constructor checked the window; params can be replaced later (Tensor::set_op),
    // so check again that every write lands inside dst (a's size).
    let span = span_bytes(a.ty, &b.ne, &[es, nb1, nb2, nb3]).and_then(|s| s.checked_add(offset));
    ensure!(
        span.is_some_and(|end| end <= d.nelements() * es),
        "{}: the window (strides {nb1}, {nb2}, {nb3}, offset {offset}) reaches past the end of a",
        if add { "acc" } else { "set" }
    );

    // Phase 1: dst = a. Both are contiguous (the constructor requires a to be; dst is a
    // fresh tensor of a's shape), so this is one flat copy split in chunks.
    if d.ptr() != a.ptr() {
        let nbytes = d.nelements() * es;
        cx.par_ranges(nbytes, 1 << 16, |r| {
            // SAFETY: both spans hold nbytes; distinct allocations or disjoint tensors.
            unsafe { std::ptr::copy(a.ptr().add(r.start), d.ptr().add(r.start), r.len()) };
        });
    }

    // Phase 2: the rows of b, placed in the window. If the window's rows overlap (strides
    // smaller than a row), one thread does them all in ggml's order.
    let n0 = b.n(0);
    let bn = [b.n(0), b.n(1), b.n(2), b.n(3)];
    let min_rows = if rows_disjoint(bn, [es, nb1, nb2, nb3], es) { rows_per_task(n0, 8192) } else { b.nrows() };
    cx.par_ranges(b.nrows(), min_rows, |rows| {
        for ir in rows {
            let (i1, i2, i3) = b.row_coords(ir);
            let row = offset + i1 * nb1 + i2 * nb2 + i3 * nb3;
            for i0 in 0..n0 {
                let off = row + i0 * es;
                // SAFETY: the constructor checked that the window lies inside a (and so
                // inside dst, of a's size); (i0..i3) is inside b. dst may be a's memory:
                // each element of a is read before the same element of dst is written.
                unsafe {
                    let pb = b.at(i0, i1, i2, i3);
                    if add {
                        let x = read_f32(Type::F32, a.ptr().add(off));
                        write_f32(Type::F32, d.ptr().add(off), x + read_f32(Type::F32, pb));
                    } else {
                        copy_elem(pb, d.ptr().add(off), es);
                    }
                }
            }
        }
    });
    Ok(())
}
