//! Helpers shared by the layout kernels (CONCAT, PAD, REPEAT, UPSCALE, DIAG, WIN_PART,
//! WIN_UNPART, GET_REL_POS) and the elementwise "same shape" kernel DIAG_MASK_*.
//!
//! A layout op is a map from dst coordinates to one element of one source, or to zero; the
//! kernels only differ in that map, so the walk over dst (rows split over threads, as
//! ggml splits rows), the byte copies and the zero fill live here once.

use super::is_plain;
use crate::backend::cpu::kernel::Cx;
use crate::backend::cpu::tdata::{read_f32, write_f32, TData};
use crate::tensor::Tensor;

/// Where one dst element comes from.
pub type Source = Option<(usize, [usize; 4])>;

/// A node whose sources (`n` of them) and result are all of one plain type: the layout
/// kernels copy elements bytewise, so any element type works, and no conversion happens.
pub fn same_plain_type(node: &Tensor, n: usize) -> bool {
    let ty = node.ty();
    is_plain(ty) && (0..n).all(|i| node.src(i).is_some_and(|s| s.ty() == ty))
}

/// Copy one element of `size` bytes (the compiler turns the fixed sizes into single moves).
///
/// # Safety
/// Both pointers valid for `size` bytes.
#[inline(always)]
pub unsafe fn copy_elem(src: *const u8, dst: *mut u8, size: usize) {
    match size {
        1 => *dst = *src,
        2 => (dst as *mut u16).write_unaligned((src as *const u16).read_unaligned()),
        4 => (dst as *mut u32).write_unaligned((src as *const u32).read_unaligned()),
        8 => (dst as *mut u64).write_unaligned((src as *const u64).read_unaligned()),
        _ => std::ptr::copy_nonoverlapping(src, dst, size),
    }
}

/// Minimum rows per task: keeps a task worth a few thousand elements.
#[inline]
pub fn rows_per_task(row_len: usize, target: usize) -> usize {
    (target / row_len.max(1)).max(1)
}

/// Call `f` with the coordinates `[i0, i1, i2, i3]` of every element of a tensor of shape
/// `t.ne`, rows split over threads (ggml's row split), about `target` elements per task.
pub fn for_each_elem<F>(cx: &Cx, t: &TData, target: usize, f: F)
where
    F: Fn([usize; 4]) + Sync,
{
    let n0 = t.n(0);
    cx.par_ranges(t.nrows(), rows_per_task(n0, target), |rows| {
        for ir in rows {
            let (i1, i2, i3) = t.row_coords(ir);
            for i0 in 0..n0 {
                f([i0, i1, i2, i3]);
            }
        }
    });
}

/// dst[i] = srcs[k][c] where `map(i) = Some((k, c))`, or 0 where it is `None`. Every
/// tensor has dst's element type (checked by the kernels' `supports`). The map is called
/// with dst coordinates `[i0, i1, i2, i3]` and must return coordinates inside source k.
pub fn gather<F>(cx: &Cx, d: &TData, srcs: &[TData], map: F)
where
    F: Fn([usize; 4]) -> Source + Sync,
{
    let es = d.ty.type_size();
    for_each_elem(cx, d, 4096, |i| {
        // SAFETY: i is inside dst; the map's contract keeps c inside srcs[k] (debug builds
        // check it). dst is a fresh tensor, never one of the sources.
        unsafe {
            let pd = d.at(i[0], i[1], i[2], i[3]);
            match map(i) {
                Some((k, c)) => {
                    let s = &srcs[k];
                    debug_assert!((0..4).all(|j| c[j] < s.n(j)), "gather: {c:?} outside {:?}", s.ne);
                    copy_elem(s.at(c[0], c[1], c[2], c[3]), pd, es);
                }
                None => std::ptr::write_bytes(pd, 0, es),
            }
        }
    });
}

/// dst[i] = f(i, s[i]) for a dst of s's shape, in f32 (read and written in each tensor's
/// own float type). Works in place: each element is read before it is written, through raw
/// pointers, so dst may be the same memory as s.
pub fn map_f32<F>(cx: &Cx, s: &TData, d: &TData, f: F)
where
    F: Fn([usize; 4], f32) -> f32 + Sync,
{
    for_each_elem(cx, d, 8192, |i| {
        // SAFETY: s and d have the same shape; i is inside both.
        unsafe {
            let x = read_f32(s.ty, s.at(i[0], i[1], i[2], i[3]));
            write_f32(d.ty, d.at(i[0], i[1], i[2], i[3]), f(i, x));
        }
    });
}

/// Whether a tensor of shape `ne` laid out with byte strides `nb` (element size `es`) has
/// rows that cannot share bytes, so rows may be written from different threads.
pub fn rows_disjoint(ne: [usize; 4], nb: [usize; 4], es: usize) -> bool {
    // Each dim's stride must step over the whole extent of the dims below it.
    let mut extent = ne[0] * es;
    for k in 1..4 {
        if ne[k] > 1 && nb[k] < extent {
            return false;
        }
        extent = extent.max(nb[k] * ne[k]);
    }
    true
}
