//! ADD1: a + b for a scalar b, in a's type (ggml: f32 + f32, f16 + f16|f32, bf16 + bf16|f32,
//! and quantized + f32: add1_q_f32). ggml converts each element to f32, adds, and rounds
//! back to a's type (quantized rows: dequantize, add, quantize with from_float); so does this,
//! a row at a time.

use super::{is_float, is_quant_rows, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(b)) = (node.src(0), node.src(1)) else {
        return false;
    };
    let ty = a.ty();
    let b_ok = b.ty() == Type::F32 || (b.ty() == ty && !ty.is_quantized());
    (is_float(ty) || is_quant_rows(a)) && node.ty() == ty && b_ok
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let a = src(node, 0)?;
    let b = src(node, 1)?;
    let d = TData::of(node)?;
    // SAFETY: b is a scalar (checked by the constructor).
    let v = unsafe { b.get_f32(0, 0, 0, 0) };
    let n0 = a.n(0);
    cx.try_par_ranges(a.nrows(), (8192 / n0.max(1)).max(1), |rows| {
        let mut x = vec![0f32; n0];
        for ir in rows {
            let (i1, i2, i3) = a.row_coords(ir);
            // SAFETY: dst has a's shape; row ir is this task's. In place (add1Inplace) dst is
            // a's memory: the row is read whole before it is written.
            unsafe {
                a.load_row(i1, i2, i3, &mut x);
                x.iter_mut().for_each(|e| *e += v);
                d.try_store_row(i1, i2, i3, &x)?;
            }
        }
        Ok(())
    })
}
