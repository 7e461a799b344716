//! ADD, SUB, MUL, DIV with ggml's broadcasting: src1 repeats over src0 in every dim
//! (row-wise: a src1 row shorter than src0's repeats along the row). Computed in f32.
//! ADD also takes a quantized src0 with an f32 src1, as ggml's add_q_f32: each row is
//! dequantized, added to, and quantized into dst (a's type, or any type through addCast).
//! The row loops are `float_simd`'s (exact: the same bits on every ISA).

use super::{is_float, is_float_or_quant, is_quant_rows, src};
use crate::backend::cpu::float_simd::{kernels, BinFn};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::OpKind;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let floats = is_float(a.ty()) && is_float(b.ty()) && is_float(node.ty());
    floats || (node.kind() == OpKind::Add && is_quant_rows(a) && b.ty() == Type::F32 && is_float_or_quant(node))
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let kern = kernels();
    let f = match node.kind() {
        OpKind::Add => kern.add,
        OpKind::Sub => kern.sub,
        OpKind::Mul => kern.mul,
        _ => kern.div,
    };
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    let n0 = d.n(0);
    let nb0 = b.n(0);
    let fast = a.ty == Type::F32
        && b.ty == Type::F32
        && d.ty == Type::F32
        && a.rows_packed()
        && b.rows_packed()
        && d.rows_packed();
    cx.try_par_ranges(d.nrows(), (8192 / n0.max(1)).max(1), |rows| {
        // Row buffers only where rows are converted: zeroing three rows per chunk cost the
        // f32 path about as much memory traffic as the sums themselves.
        let scratch = |n: usize| if fast { Vec::new() } else { vec![0f32; n] };
        let (mut xa, mut xb, mut out) = (scratch(n0), scratch(nb0), scratch(n0));
        for ir in rows {
            let (i1, i2, i3) = d.row_coords(ir);
            let (j1, j2, j3) = (i1 % b.n(1), i2 % b.n(2), i3 % b.n(3));
            // SAFETY: (i1,i2,i3) is inside a and dst (same shape); (j1,j2,j3) inside b.
            unsafe {
                if fast {
                    let pa = a.row_ptr(i1, i2, i3) as *const f32;
                    let pb = b.row_ptr(j1, j2, j3) as *const f32;
                    combine(f, pa, pb, nb0, d.row_ptr(i1, i2, i3) as *mut f32, n0);
                } else {
                    a.load_row(i1, i2, i3, &mut xa);
                    b.load_row(j1, j2, j3, &mut xb);
                    combine(f, xa.as_ptr(), xb.as_ptr(), nb0, out.as_mut_ptr(), n0);
                    d.try_store_row(i1, i2, i3, &out)?;
                }
            }
        }
        Ok(())
    })
}

/// out[i] = x[i] op y[i % ny] for i < n, one `f` call per repeat of y. Raw pointers,
/// because `out` may be the same memory as `x` (in-place ops) or even `y`: each element is
/// read before it is written.
///
/// # Safety
/// x and out valid for n floats, y for ny floats.
unsafe fn combine(f: BinFn, x: *const f32, y: *const f32, ny: usize, out: *mut f32, n: usize) {
    if ny == 0 {
        return;
    }
    let mut i = 0;
    while i < n {
        let len = ny.min(n - i);
        f(x.add(i), y, out.add(i), len);
        i += len;
    }
}
