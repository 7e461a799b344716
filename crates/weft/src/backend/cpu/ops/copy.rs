//! DUP, CPY, CONT: copy elements in logical (row-major) order from src0 into the node's
//! memory, converting the type. Shapes may differ as long as the element counts match.
//! Same type: bytes are copied (exact for every type, as ggml's dup_bytes; quantized types
//! block by block). Integer to integer goes through i64 (exact where the value fits);
//! everything else through f32, rounding to nearest even for f16/bf16 as ggml does. Into a
//! quantized type, rows are quantized as ggml's dup_f32 / dup_f16 do it (from_float on each
//! f32 row: `TData::try_store_row`); out of one, rows are dequantized (which ggml's CPU does
//! not do: it copies quantized data only into its own type).

use super::gather::copy_elem;
use super::matmul::packed_f32;
use super::{is_float, is_plain, is_quant_rows, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::{read_f32, write_f32, TData};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let Some(s) = node.src(0) else {
        return false;
    };
    if !s.ty().is_quantized() && !node.ty().is_quantized() {
        return is_plain(s.ty()) && is_plain(node.ty());
    }
    // A quantized side needs packed blocks; the other side its own type or a float type.
    let side = |t: &Tensor| if t.ty().is_quantized() { is_quant_rows(t) } else { is_float(t.ty()) };
    side(s) && side(node)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    let quantized = s.ty.is_quantized() || d.ty.is_quantized();
    if s.is_contiguous() && d.is_contiguous() && s.ty == d.ty {
        let nbytes = s.ty.row_size(s.nelements());
        cx.par_ranges(nbytes, 1 << 16, |r| {
            // SAFETY: both tensors span nbytes; ptr::copy allows overlap (in-place dup).
            unsafe { std::ptr::copy(s.ptr().add(r.start), d.ptr().add(r.start), r.len()) };
        });
        Ok(())
    } else if s.ne[0] == d.ne[0] {
        copy_rows(&s, &d, cx)
    } else if s.ty == d.ty || !quantized {
        copy_elements(&s, &d, cx);
        Ok(())
    } else {
        copy_through_f32(&s, &d, cx)
    }
}

/// Read an integer element as i64.
///
/// # Safety
/// `p` points at a readable element of integer type `ty`.
#[inline]
unsafe fn read_i64(ty: Type, p: *const u8) -> i64 {
    match ty {
        Type::I8 => (p as *const i8).read() as i64,
        Type::I16 => (p as *const i16).read_unaligned() as i64,
        Type::I32 => (p as *const i32).read_unaligned() as i64,
        _ => (p as *const i64).read_unaligned(),
    }
}

/// Write an i64 as an integer element (wrapping to the narrower type, as C casts do).
///
/// # Safety
/// `p` points at a writable element of integer type `ty`.
#[inline]
unsafe fn write_i64(ty: Type, p: *mut u8, v: i64) {
    match ty {
        Type::I8 => (p as *mut i8).write(v as i8),
        Type::I16 => (p as *mut i16).write_unaligned(v as i16),
        Type::I32 => (p as *mut i32).write_unaligned(v as i32),
        _ => (p as *mut i64).write_unaligned(v),
    }
}

/// Copy one element from `ps` (type `sty`) to `pd` (type `dty`), converting.
///
/// # Safety
/// Both pointers valid for one element of their type.
#[inline]
pub unsafe fn convert_elem(sty: Type, ps: *const u8, dty: Type, pd: *mut u8) {
    if sty == dty {
        copy_elem(ps, pd, sty.type_size());
    } else if sty.is_integer() && dty.is_integer() {
        write_i64(dty, pd, read_i64(sty, ps));
    } else {
        write_f32(dty, pd, read_f32(sty, ps));
    }
}

/// Copy row `sr` of s into row `dr` of d (same length), converting the type; `buf` (ne0
/// floats) is scratch for the f32 path. Quantized rows (packed blocks) are copied as bytes
/// into their own type and go through f32 otherwise; only quantizing can fail.
///
/// # Safety
/// Row coordinates inside each tensor; the caller owns dst's row.
pub unsafe fn convert_row(
    s: &TData,
    (s1, s2, s3): (usize, usize, usize),
    d: &TData,
    (d1, d2, d3): (usize, usize, usize),
    buf: &mut [f32],
) -> Result<()> {
    let n0 = s.n(0);
    if s.ty == d.ty && s.rows_packed() && d.rows_packed() {
        std::ptr::copy(s.row_ptr(s1, s2, s3), d.row_ptr(d1, d2, d3), s.ty.row_size(n0));
    } else if s.ty.is_plain() && (s.ty == d.ty || (s.ty.is_integer() && d.ty.is_integer())) {
        for i0 in 0..n0 {
            convert_elem(s.ty, s.at(i0, s1, s2, s3), d.ty, d.at(i0, d1, d2, d3));
        }
    } else {
        s.load_row(s1, s2, s3, buf);
        d.try_store_row(d1, d2, d3, buf)?;
    }
    Ok(())
}

/// Same row length: row k of src is row k of dst in flat order.
fn copy_rows(s: &TData, d: &TData, cx: &Cx) -> Result<()> {
    let n0 = s.n(0);
    cx.try_par_ranges(s.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        let mut buf = vec![0f32; n0];
        for ir in rows {
            // SAFETY: row indices come from each tensor's own shape.
            unsafe { convert_row(s, s.row_coords(ir), d, d.row_coords(ir), &mut buf)? };
        }
        Ok(())
    })
}

/// Different row lengths, plain types or one quantized type on both sides: walk flat
/// indices in units of one block (one element for plain types), converting or copying each.
fn copy_elements(s: &TData, d: &TData, cx: &Cx) {
    let blck = s.ty.blck_size();
    let n = s.nelements() / blck;
    let coords = |t: &TData, i: usize| {
        let (n0, n1, n2) = (t.n(0) / blck, t.n(1), t.n(2));
        (i % n0 * blck, (i / n0) % n1, (i / (n0 * n1)) % n2, i / (n0 * n1 * n2))
    };
    cx.par_ranges(n, 4096 / blck, |range| {
        for i in range {
            let (a0, a1, a2, a3) = coords(s, i);
            let (b0, b1, b2, b3) = coords(d, i);
            // SAFETY: coordinates come from each tensor's own shape; a0 and b0 start blocks.
            unsafe { convert_elem(s.ty, s.at(a0, a1, a2, a3), d.ty, d.at(b0, b1, b2, b3)) };
        }
    });
}

/// Different row lengths and types, one of them quantized: all of src as f32 in logical
/// order, then dst row by row. Into a contiguous quantized dst this gives ggml's bytes (it
/// quantizes src rows one after another): block boundaries fall at the same flat indices and
/// every quantizer works block by block.
fn copy_through_f32(s: &TData, d: &TData, cx: &Cx) -> Result<()> {
    let values = packed_f32(s, Type::F32, cx);
    let n0 = d.n(0);
    cx.try_par_ranges(d.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        for ir in rows {
            let (i1, i2, i3) = d.row_coords(ir);
            // SAFETY: row ir of dst belongs to this task; `values` holds n0 floats per row.
            unsafe { d.try_store_row(i1, i2, i3, &values[ir * n0..(ir + 1) * n0])? };
        }
        Ok(())
    })
}
