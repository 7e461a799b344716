//! Reading and writing tensor bytes through whatever buffer holds them
//! (ggml_backend_tensor_set / get / memset / copy), with bounds checks and a refusal to
//! touch memory a running compute is using.

use std::sync::Arc;

use super::Buffer;
use crate::graph::Graph;
use crate::tensor::{Storage, Tensor};
use crate::{Error, Result, Type};

fn storage_for(what: &str, t: &Tensor, offset: usize, len: usize) -> Result<Storage> {
    let s = storage_unguarded(what, t, offset, len)?;
    if s.buffer.state().in_use() {
        return Err(Error::busy(format!(
            "{what}: tensor '{}' is in use by a running compute; await it first",
            t.label()
        )));
    }
    Ok(s)
}

/// Bounds-checked storage of a tensor, for engine code that runs inside a compute.
fn storage_unguarded(what: &str, t: &Tensor, offset: usize, len: usize) -> Result<Storage> {
    let s = t
        .storage()
        .ok_or_else(|| Error::invalid(format!("{what}: tensor '{}' is not allocated in any buffer", t.label())))?;
    let nbytes = t.nbytes();
    if offset.checked_add(len).is_none_or(|e| e > nbytes) {
        return Err(Error::invalid(format!(
            "{what}: bytes {offset}..{} are outside tensor '{}' ({nbytes} bytes)",
            offset.saturating_add(len),
            t.label()
        )));
    }
    Ok(s)
}

/// Write raw bytes into a tensor at a byte offset.
pub fn tensor_set(t: &Tensor, data: &[u8], offset: usize) -> Result<()> {
    let s = storage_for("tensorSet", t, offset, data.len())?;
    s.buffer.write(s.offset + offset, data)
}

/// Read raw bytes from a tensor at a byte offset.
pub fn tensor_get(t: &Tensor, out: &mut [u8], offset: usize) -> Result<()> {
    let s = storage_for("tensorGet", t, offset, out.len())?;
    s.buffer.read(s.offset + offset, out)
}

/// Fill `size` bytes of a tensor with `value`.
pub fn tensor_memset(t: &Tensor, value: u8, offset: usize, size: usize) -> Result<()> {
    let s = storage_for("tensorMemset", t, offset, size)?;
    s.buffer.fill(s.offset + offset, value, size)
}

/// Read a tensor's bytes from code that runs inside a compute which already holds the
/// graph's buffers (compare_graph_backend callbacks): no busy check.
pub fn tensor_get_in_compute(t: &Tensor, out: &mut [u8], offset: usize) -> Result<()> {
    let s = storage_unguarded("tensorGet", t, offset, out.len())?;
    s.buffer.read(s.offset + offset, out)
}

/// ggml_backend_tensor_copy: copy all bytes of src into dst, which must have the same
/// layout; buffers on different devices go through host memory.
pub fn tensor_copy(src: &Tensor, dst: &Tensor) -> Result<()> {
    let n = src.nbytes().min(dst.nbytes());
    storage_for("tensorCopy", src, 0, n)?;
    storage_for("tensorCopy", dst, 0, n)?;
    tensor_copy_internal(src, dst)
}

/// tensor_copy for engine code running inside a compute (no busy check).
pub(crate) fn tensor_copy_internal(src: &Tensor, dst: &Tensor) -> Result<()> {
    if src.ty() != dst.ty() || src.ne() != dst.ne() || src.nb() != dst.nb() {
        return Err(Error::invalid(format!(
            "tensorCopy: '{}' and '{}' must have the same type, shape and strides",
            src.label(),
            dst.label()
        )));
    }
    let n = src.nbytes();
    let s = storage_unguarded("tensorCopy", src, 0, n)?;
    let d = storage_unguarded("tensorCopy", dst, 0, n)?;
    if n == 0 {
        return Ok(());
    }
    if d.buffer.copy_from(s.buffer.as_ref(), s.offset, d.offset, n)? {
        return Ok(());
    }
    let mut tmp = vec![0u8; n];
    s.buffer.read(s.offset, &mut tmp)?;
    d.buffer.write(d.offset, &tmp)
}

/// Marks every buffer a graph touches as in use for the guard's lifetime, so JS cannot
/// write, read or free them under a running compute, and a second compute cannot run over
/// the same memory at the same time.
pub struct BusyGuard {
    buffers: Vec<Arc<dyn Buffer>>,
}

impl BusyGuard {
    pub fn for_graph(graph: &Graph) -> Result<BusyGuard> {
        let tensors = graph.nodes().iter().chain(graph.leafs().iter());
        Self::for_tensors(tensors.flat_map(|n| std::iter::once(n).chain(n.srcs().iter().flatten())))
    }

    /// The buffers of these tensors, for work that reads or writes them off the JS thread.
    pub fn for_tensors<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> Result<BusyGuard> {
        let mut guard = BusyGuard { buffers: Vec::new() };
        for t in tensors {
            let Some(s) = t.storage() else { continue };
            if guard.buffers.iter().any(|b| Arc::ptr_eq(b, &s.buffer)) {
                continue;
            }
            if !s.buffer.state().try_acquire() {
                // Dropping `guard` releases what was taken so far.
                return Err(Error::busy(format!(
                    "compute: buffer '{}' holding tensor '{}' is in use by another running compute; await it first",
                    s.buffer.name(),
                    t.label()
                )));
            }
            guard.buffers.push(s.buffer);
        }
        Ok(guard)
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        for b in &self.buffers {
            b.state().release();
        }
    }
}

/// Quantized rows whose blocks are strided (a permuted view) are read block by block, nb[0]
/// apart as in ggml's tensor_to_float; a stride shorter than a block would make them overlap
/// and reach past the bytes ggml_nbytes counts.
fn check_block_stride(what: &str, t: &Tensor) -> Result<()> {
    let (ty, nb0) = (t.ty(), t.nb()[0]);
    if ty.is_quantized() && nb0 < ty.type_size() {
        return Err(Error::invalid(format!(
            "{what}: tensor '{}' steps its {ty} blocks by nb[0]={nb0} bytes, less than one block ({})",
            t.label(),
            ty.type_size()
        )));
    }
    Ok(())
}

/// Gather a tensor's elements in logical order (ne0 fastest) from its raw span, following
/// its strides, converting each row with `convert` (packed row bytes -> ne0 values).
fn gather<T: Copy + Default>(
    what: &str,
    t: &Tensor,
    span: &[u8],
    convert: impl Fn(&[u8], &mut [T]) -> Result<()>,
) -> Result<Vec<T>> {
    check_block_stride(what, t)?;
    let (ne, nb, ty) = (t.ne(), t.nb(), t.ty());
    let n0 = ne[0].max(0) as usize;
    let mut out = vec![T::default(); t.nelements().max(0) as usize];
    let row_bytes = ty.row_size(n0);
    let packed = nb[0] == ty.type_size();
    let mut row_buf = vec![0u8; row_bytes];
    let mut k = 0;
    for i3 in 0..ne[3].max(0) as usize {
        for i2 in 0..ne[2].max(0) as usize {
            for i1 in 0..ne[1].max(0) as usize {
                let base = i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
                let row: &[u8] = if packed {
                    &span[base..base + row_bytes]
                } else {
                    // Strided elements (blocks, for quantized types: nb[0] steps a block).
                    let es = ty.type_size();
                    for j in 0..n0 / ty.blck_size() {
                        row_buf[j * es..(j + 1) * es].copy_from_slice(&span[base + j * nb[0]..base + j * nb[0] + es]);
                    }
                    &row_buf
                };
                convert(row, &mut out[k..k + n0])?;
                k += n0;
            }
        }
    }
    Ok(out)
}

fn gather_f32(t: &Tensor, span: &[u8]) -> Result<Vec<f32>> {
    let ty = t.ty();
    gather("toFloat32", t, span, |row, out| crate::types::convert::row_to_f32(ty, row, out))
}

/// A tensor's elements as i64, in logical order: for integer tensors (i8, i16, i32, i64),
/// whose values f32 cannot all hold. `what` names the JS method in errors.
pub fn tensor_to_i64(what: &str, t: &Tensor, allowed: &[Type]) -> Result<Vec<i64>> {
    let ty = t.ty();
    if !allowed.contains(&ty) {
        let names: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
        return Err(Error::invalid(format!(
            "{what}: tensor '{}' is {ty}; {what} reads {} tensors (toFloat32 reads any type)",
            t.label(),
            names.join(", ")
        )));
    }
    let mut span = vec![0u8; t.nbytes()];
    tensor_get(t, &mut span, 0)?;
    let es = ty.type_size();
    gather(what, t, &span, |row, out| {
        for (o, b) in out.iter_mut().zip(row.chunks_exact(es)) {
            *o = match b.len() {
                1 => b[0] as i8 as i64,
                2 => i16::from_le_bytes([b[0], b[1]]) as i64,
                4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
                _ => i64::from_le_bytes(b.try_into().expect("8-byte chunk")),
            };
        }
        Ok(())
    })
}

/// A tensor's elements as f32, in logical order (ggml's test tensor_to_float).
pub fn tensor_to_f32(t: &Tensor) -> Result<Vec<f32>> {
    let mut span = vec![0u8; t.nbytes()];
    tensor_get(t, &mut span, 0)?;
    gather_f32(t, &span)
}

/// tensor_to_f32 for code running inside a compute that owns the buffers.
pub fn tensor_to_f32_in_compute(t: &Tensor) -> Result<Vec<f32>> {
    let mut span = vec![0u8; t.nbytes()];
    tensor_get_in_compute(t, &mut span, 0)?;
    gather_f32(t, &span)
}

/// Write f32 values (logical order) into a tensor, converting to its type and following its
/// strides; elements the tensor's strides skip are left as they were.
pub fn tensor_from_f32(t: &Tensor, values: &[f32]) -> Result<()> {
    let n = t.nelements().max(0) as usize;
    if values.len() != n {
        return Err(Error::invalid(format!(
            "fromFloat32: tensor '{}' has {n} elements, got {} values",
            t.label(),
            values.len()
        )));
    }
    let (ne, nb, ty) = (t.ne(), t.nb(), t.ty());
    let n0 = ne[0].max(0) as usize;
    let row_bytes = ty.row_size(n0);
    if t.is_contiguous() {
        let mut bytes = vec![0u8; t.nbytes()];
        for (r, chunk) in values.chunks(n0.max(1)).enumerate() {
            crate::types::convert::row_from_f32(ty, chunk, &mut bytes[r * row_bytes..(r + 1) * row_bytes])?;
        }
        return tensor_set(t, &bytes, 0);
    }
    // Strided: read-modify-write the span so bytes between elements keep their values.
    check_block_stride("fromFloat32", t)?;
    let mut span = vec![0u8; t.nbytes()];
    tensor_get(t, &mut span, 0)?;
    let packed = nb[0] == ty.type_size();
    let es = ty.type_size();
    let mut row = vec![0u8; row_bytes];
    let mut k = 0;
    for i3 in 0..ne[3].max(0) as usize {
        for i2 in 0..ne[2].max(0) as usize {
            for i1 in 0..ne[1].max(0) as usize {
                let base = i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
                crate::types::convert::row_from_f32(ty, &values[k..k + n0], &mut row)?;
                if packed {
                    span[base..base + row_bytes].copy_from_slice(&row);
                } else {
                    for j in 0..n0 / ty.blck_size() {
                        span[base + j * nb[0]..base + j * nb[0] + es].copy_from_slice(&row[j * es..(j + 1) * es]);
                    }
                }
                k += n0;
            }
        }
    }
    tensor_set(t, &span, 0)
}
