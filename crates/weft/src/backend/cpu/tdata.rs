//! A kernel's view of one tensor: base pointer, type, shape and byte strides, with row
//! load/store in f32 for every plain type and (dequantizing / quantizing whole blocks) every
//! quantized one. Tensors were checked to fit their buffers when they were bound, so any
//! index inside `ne` is inside the allocation.

use super::float_simd::{kernels, Elem};
use crate::tensor::{Tensor, MAX_DIMS};
use crate::types::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, quant, Type};
use crate::{Error, Result};

#[derive(Clone, Copy, Debug)]
pub struct TData {
    ptr: *mut u8,
    pub ty: Type,
    pub ne: [i64; MAX_DIMS],
    pub nb: [usize; MAX_DIMS],
}

// Kernels share TData across rayon workers; each worker touches its own rows of dst.
unsafe impl Send for TData {}
unsafe impl Sync for TData {}

impl TData {
    pub fn of(t: &Tensor) -> Result<TData> {
        let found = t.with_storage(|buffer, offset| match buffer.host_ptr() {
            Some(base) => Ok((base, offset)),
            None if buffer.is_released() => Err("a released (disposed) buffer"),
            None => Err("memory the CPU cannot address"),
        });
        let (base, offset) = match found {
            Some(Ok(at)) => at,
            Some(Err(why)) => return Err(Error::invalid(format!("tensor '{}' lives in {why}", t.label()))),
            None => return Err(Error::invalid(format!("tensor '{}' is not allocated", t.label()))),
        };
        // SAFETY: the storage offset was checked against the buffer size when bound.
        let ptr = unsafe { base.add(offset) };
        Ok(TData { ptr, ty: t.ty(), ne: t.ne(), nb: t.nb() })
    }

    /// ne[i] as usize (shapes are never negative).
    #[inline]
    pub fn n(&self, i: usize) -> usize {
        self.ne[i] as usize
    }
    pub fn nrows(&self) -> usize {
        self.n(1) * self.n(2) * self.n(3)
    }
    pub fn nelements(&self) -> usize {
        self.n(0) * self.nrows()
    }
    /// Split a flat row index into (i1, i2, i3).
    #[inline]
    pub fn row_coords(&self, ir: usize) -> (usize, usize, usize) {
        let (n1, n2) = (self.n(1), self.n(2));
        (ir % n1, (ir / n1) % n2, ir / (n1 * n2))
    }
    #[inline]
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    /// Pointer to element (i0, i1, i2, i3). For blocked types i0 must start a block.
    ///
    /// # Safety
    /// Indices must be inside `ne`.
    #[inline]
    pub unsafe fn at(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> *mut u8 {
        self.ptr.add(i0 / self.ty.blck_size() * self.nb[0] + i1 * self.nb[1] + i2 * self.nb[2] + i3 * self.nb[3])
    }
    /// # Safety
    /// Indices must be inside `ne`.
    #[inline]
    pub unsafe fn row_ptr(&self, i1: usize, i2: usize, i3: usize) -> *mut u8 {
        self.at(0, i1, i2, i3)
    }
    /// Rows whose elements are packed (nb[0] == type size).
    pub fn rows_packed(&self) -> bool {
        self.nb[0] == self.ty.type_size()
    }
    pub fn is_contiguous(&self) -> bool {
        let mut expect = self.ty.type_size();
        if self.nb[0] != expect && self.ne[0] != 1 {
            return false;
        }
        expect = self.ty.row_size(self.n(0));
        for i in 1..MAX_DIMS {
            if self.ne[i] != 1 && self.nb[i] != expect {
                return false;
            }
            expect *= self.n(i);
        }
        true
    }

    /// The f32 row (i1, i2, i3) as a slice, when this is a packed f32 tensor.
    ///
    /// # Safety
    /// Indices inside `ne`; no other live &mut to the same row.
    #[inline]
    pub unsafe fn f32_row<'a>(&self, i1: usize, i2: usize, i3: usize) -> &'a [f32] {
        debug_assert!(self.ty == Type::F32 && self.rows_packed());
        std::slice::from_raw_parts(self.row_ptr(i1, i2, i3) as *const f32, self.n(0))
    }
    /// # Safety
    /// Indices inside `ne`; the caller owns this row for the duration.
    #[inline]
    pub unsafe fn f32_row_mut<'a>(&self, i1: usize, i2: usize, i3: usize) -> &'a mut [f32] {
        debug_assert!(self.ty == Type::F32 && self.rows_packed());
        std::slice::from_raw_parts_mut(self.row_ptr(i1, i2, i3) as *mut f32, self.n(0))
    }

    /// Read element i0 of row (i1, i2, i3) as f32.
    ///
    /// # Safety
    /// Indices inside `ne`; plain types only.
    #[inline]
    pub unsafe fn get_f32(&self, i0: usize, i1: usize, i2: usize, i3: usize) -> f32 {
        read_f32(self.ty, self.at(i0, i1, i2, i3))
    }
    /// # Safety
    /// Indices inside `ne`; plain types only.
    #[inline]
    pub unsafe fn set_f32(&self, i0: usize, i1: usize, i2: usize, i3: usize, v: f32) {
        write_f32(self.ty, self.at(i0, i1, i2, i3), v)
    }

    /// Load row (i1, i2, i3) into `out` (len ne[0]) as f32, converting from any plain type or
    /// dequantizing a quantized one. Quantized rows must be packed blocks (`rows_packed`),
    /// which the kernels' `supports` check; a type the quant module does not serve (the
    /// repacked layouts, which no kernel accepts) reads as NaN.
    ///
    /// # Safety
    /// Indices inside `ne`.
    pub unsafe fn load_row(&self, i1: usize, i2: usize, i3: usize, out: &mut [f32]) {
        let n = self.n(0);
        let p = self.row_ptr(i1, i2, i3);
        if self.ty.is_quantized() {
            let bytes = std::slice::from_raw_parts(p, self.ty.row_size(n));
            if quant::dequantize_row(self.ty, bytes, &mut out[..n]).is_err() {
                out[..n].fill(f32::NAN);
            }
            return;
        }
        if let (Some(elem), true) = (Elem::of(self.ty), self.rows_packed()) {
            // f32 copied, f16 / bf16 widened with SIMD (the same bits as element by element)
            kernels().to_f32(elem, p, out.as_mut_ptr(), n);
            return;
        }
        let nb0 = self.nb[0];
        for (i, o) in out.iter_mut().enumerate().take(n) {
            *o = read_f32(self.ty, p.add(i * nb0));
        }
    }

    /// Store `src` (len ne[0]) into row (i1, i2, i3), converting to the tensor's plain type.
    /// Quantized rows go through [`TData::try_store_row`], because quantizing can fail.
    ///
    /// # Safety
    /// Indices inside `ne`; the caller owns this row.
    pub unsafe fn store_row(&self, i1: usize, i2: usize, i3: usize, src: &[f32]) {
        debug_assert!(!self.ty.is_quantized(), "store_row of {}: use try_store_row", self.ty);
        let n = self.n(0);
        let p = self.row_ptr(i1, i2, i3);
        if let (Some(elem), true) = (Elem::of(self.ty), self.rows_packed()) {
            // f32 copied, f16 / bf16 rounded with SIMD (the same bits as element by element)
            kernels().f32_to(elem, src.as_ptr(), p, n);
            return;
        }
        let nb0 = self.nb[0];
        for (i, &v) in src.iter().enumerate().take(n) {
            write_f32(self.ty, p.add(i * nb0), v);
        }
    }

    /// Store `src` (len ne[0]) into row (i1, i2, i3) in any type: plain types as
    /// [`TData::store_row`], quantized ones (packed blocks) quantized as ggml's from_float
    /// (`quant::quantize_row_for_store`). Fails where the quantizer does (the grid I-quants on
    /// non-finite input, where ggml aborts).
    ///
    /// # Safety
    /// Indices inside `ne`; the caller owns this row.
    pub unsafe fn try_store_row(&self, i1: usize, i2: usize, i3: usize, src: &[f32]) -> Result<()> {
        if !self.ty.is_quantized() {
            self.store_row(i1, i2, i3, src);
            return Ok(());
        }
        let n = self.n(0);
        let bytes = std::slice::from_raw_parts_mut(self.row_ptr(i1, i2, i3), self.ty.row_size(n));
        quant::quantize_row_for_store(self.ty, &src[..n], bytes)
    }
}

/// Read one element of a plain type as f32 (unaligned-safe).
///
/// # Safety
/// `p` must point at a readable element of type `ty`.
#[inline]
pub unsafe fn read_f32(ty: Type, p: *const u8) -> f32 {
    match ty {
        Type::F32 => (p as *const f32).read_unaligned(),
        Type::F16 => f16_to_f32((p as *const u16).read_unaligned()),
        Type::BF16 => bf16_to_f32((p as *const u16).read_unaligned()),
        Type::I8 => (p as *const i8).read() as f32,
        Type::I16 => (p as *const i16).read_unaligned() as f32,
        Type::I32 => (p as *const i32).read_unaligned() as f32,
        Type::I64 => (p as *const i64).read_unaligned() as f32,
        Type::F64 => (p as *const f64).read_unaligned() as f32,
        _ => f32::NAN,
    }
}

/// Write one f32 as an element of a plain type (integers truncate toward zero, as C casts).
///
/// # Safety
/// `p` must point at a writable element of type `ty`.
#[inline]
pub unsafe fn write_f32(ty: Type, p: *mut u8, v: f32) {
    match ty {
        Type::F32 => (p as *mut f32).write_unaligned(v),
        Type::F16 => (p as *mut u16).write_unaligned(f32_to_f16(v)),
        Type::BF16 => (p as *mut u16).write_unaligned(f32_to_bf16(v)),
        Type::I8 => (p as *mut i8).write(v as i8),
        Type::I16 => (p as *mut i16).write_unaligned(v as i16),
        Type::I32 => (p as *mut i32).write_unaligned(v as i32),
        Type::I64 => (p as *mut i64).write_unaligned(v as i64),
        Type::F64 => (p as *mut f64).write_unaligned(v as f64),
        _ => {}
    }
}
