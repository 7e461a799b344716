//! Reading and writing tensor bytes through whatever buffer holds them
//! (ggml_backend_tensor_set / get / memset / copy), with bounds checks and a refusal to
//! touch memory a running compute is using.

use std::sync::Arc;

use super::Buffer;
use crate::graph::Graph;
use crate::tensor::{Storage, Tensor};
use crate::{Error, Result, Type};

/// Storage of a tensor JS writes: nothing may hold its buffer.
fn storage_for(what: &str, t: &Tensor, offset: usize, len: usize) -> Result<Storage> {
    let s = storage_unguarded(what, t, offset, len)?;
    s.buffer.state().check_idle(&format!("{what}: tensor '{}'", t.label()), &s.buffer.name())?;
    Ok(s)
}

/// Storage of a tensor JS reads: pending reads may share its buffer, a compute may not,
/// unless it is paused with a read permit for this tensor (the scheduler's eval callback).
fn storage_for_read(what: &str, t: &Tensor, offset: usize, len: usize) -> Result<Storage> {
    let s = storage_unguarded(what, t, offset, len)?;
    s.buffer.state().check_readable(&format!("{what}: tensor '{}'", t.label()), &s.buffer.name(), t.id())?;
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

/// `len` default values, or an OutOfMemory error where the allocation fails (a plain `vec!`
/// would abort the process).
pub fn try_vec<T: Clone + Default>(what: &str, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        Error::oom(format!("{what}: cannot allocate {len} elements of {} bytes", std::mem::size_of::<T>()))
    })?;
    v.resize(len, T::default());
    Ok(v)
}

/// Write raw bytes into a tensor at a byte offset.
pub fn tensor_set(t: &Tensor, data: &[u8], offset: usize) -> Result<()> {
    let s = storage_for("tensorSet", t, offset, data.len())?;
    s.buffer.write(s.offset + offset, data)
}

/// Read raw bytes from a tensor at a byte offset.
pub fn tensor_get(t: &Tensor, out: &mut [u8], offset: usize) -> Result<()> {
    let s = storage_for_read("tensorGet", t, offset, out.len())?;
    s.buffer.read(s.offset + offset, out)
}

/// `len` bytes of a tensor from a byte offset, checked before anything is allocated.
pub fn tensor_read(t: &Tensor, offset: usize, len: usize) -> Result<Vec<u8>> {
    storage_for_read("tensorGet", t, offset, len)?;
    let mut out = try_vec("tensorGet", len)?;
    tensor_get(t, &mut out, offset)?;
    Ok(out)
}

/// tensor_read for work that holds the tensor's buffer (a read task, a compute callback).
pub fn tensor_read_in_compute(t: &Tensor, offset: usize, len: usize) -> Result<Vec<u8>> {
    storage_unguarded("tensorGet", t, offset, len)?;
    let mut out = try_vec("tensorGet", len)?;
    tensor_get_in_compute(t, &mut out, offset)?;
    Ok(out)
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
    storage_for_read("tensorCopy", src, 0, n)?;
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
    let mut tmp = try_vec("tensorCopy", n)?;
    s.buffer.read(s.offset, &mut tmp)?;
    d.buffer.write(d.offset, &tmp)
}

/// How a BusyGuard holds its buffers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// A compute: alone, nothing else reads, writes or frees the buffers meanwhile.
    Exclusive,
    /// A read off the JS thread: other reads may share the buffers, writes and computes
    /// may not.
    Shared,
}

/// Marks the buffers some work off the JS thread uses as held for the guard's lifetime,
/// so JS cannot write, read or free them under a running compute, a second compute cannot
/// run over the same memory at the same time, and reads share.
pub struct BusyGuard {
    buffers: Vec<Arc<dyn Buffer>>,
    hold: Hold,
}

impl BusyGuard {
    /// Every buffer a graph touches, exclusively. Every tensor that has bytes must already
    /// be allocated: a compute's memory is fixed when it is queued, so nothing allocated
    /// later can be freed or written under it.
    pub fn for_graph(graph: &Graph) -> Result<BusyGuard> {
        let tensors = graph.nodes().iter().chain(graph.leafs().iter());
        let all = tensors.flat_map(|n| std::iter::once(n).chain(n.srcs().iter().flatten()));
        Self::acquire(all, Hold::Exclusive, |t| {
            (t.nbytes() > 0).then(|| {
                Error::invalid(format!(
                    "compute: tensor '{}' of the graph is not allocated; allocate the graph first (allocCtxTensors or a GraphAllocator)",
                    t.label()
                ))
            })
        })
    }

    /// The buffers of these tensors, exclusively (work that writes them off the JS thread).
    pub fn for_tensors<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> Result<BusyGuard> {
        Self::acquire(tensors, Hold::Exclusive, |_| None)
    }

    /// The buffers of these tensors, shared with other reads (a read off the JS thread).
    pub fn for_reads<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> Result<BusyGuard> {
        Self::acquire(tensors, Hold::Shared, |_| None)
    }

    /// One look at each tensor's storage (a compute passes every node's tensors here, so
    /// one lock each): `unallocated` says whether a tensor without storage is an error.
    fn acquire<'a>(
        tensors: impl IntoIterator<Item = &'a Tensor>,
        hold: Hold,
        unallocated: impl Fn(&Tensor) -> Option<Error>,
    ) -> Result<BusyGuard> {
        let mut guard = BusyGuard { buffers: Vec::new(), hold };
        for t in tensors {
            // A handle only for a buffer not held yet (every node's tensors come by here).
            let held = |b: &Arc<dyn Buffer>| guard.buffers.iter().any(|g| Arc::ptr_eq(g, b));
            let Some(found) = t.with_storage(|b, _| (!held(b)).then(|| b.clone())) else {
                // Dropping `guard` releases what was taken so far.
                match unallocated(t) {
                    Some(e) => return Err(e),
                    None => continue,
                }
            };
            let Some(buffer) = found else { continue };
            let state = buffer.state();
            let taken = if hold == Hold::Exclusive { state.try_acquire() } else { state.try_acquire_read() };
            if let Err(holder) = taken {
                // Dropping `guard` releases what was taken so far.
                let what = if hold == Hold::Exclusive { "compute" } else { "read" };
                return Err(Error::busy(format!(
                    "{what}: buffer '{}' holding tensor '{}' is {holder}; await it first",
                    buffer.name(),
                    t.label()
                )));
            }
            guard.buffers.push(buffer);
        }
        Ok(guard)
    }
}

/// Lets JS read some tensors whose buffers a compute holds, while that compute is paused
/// waiting for JS (the scheduler's eval callback, with every backend synchronized): the
/// compute neither writes nor frees anything until the permit is dropped. Writes and
/// dispose stay refused.
pub struct ReadPermit {
    entries: Vec<(Arc<dyn Buffer>, u64)>,
}

impl ReadPermit {
    pub fn open<'a>(tensors: impl IntoIterator<Item = &'a Tensor>) -> ReadPermit {
        let mut entries = Vec::new();
        for t in tensors {
            if let Some(s) = t.storage() {
                s.buffer.state().permit_read(t.id());
                entries.push((s.buffer, t.id()));
            }
        }
        ReadPermit { entries }
    }
}

impl Drop for ReadPermit {
    fn drop(&mut self) {
        for (b, id) in &self.entries {
            b.state().revoke_read(*id);
        }
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        for b in &self.buffers {
            match self.hold {
                Hold::Exclusive => b.state().release(),
                Hold::Shared => b.state().release_read(),
            }
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
    // Strides may repeat elements (nb = 0), so the count can exceed the bytes spanned.
    let mut out = try_vec(what, t.nelements().max(0) as usize)?;
    let row_bytes = ty.row_size(n0);
    let packed = nb[0] == ty.type_size();
    let mut row_buf = if packed { Vec::new() } else { try_vec(what, row_bytes)? };
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
/// whose values f32 cannot all hold. `what` names the JS method in errors. Storage is
/// checked before anything is allocated; a tensor without elements reads as none.
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
    storage_for_read(what, t, 0, t.nbytes())?;
    if t.is_empty() {
        return Ok(Vec::new());
    }
    let span = tensor_read(t, 0, t.nbytes())?;
    let es = ty.type_size();
    gather(what, t, &span, |row, out| {
        for (o, b) in out.iter_mut().zip(row.chunks_exact(es)) {
            *o = match b {
                [x] => *x as i8 as i64,
                [x, y] => i16::from_le_bytes([*x, *y]) as i64,
                [x, y, z, w] => i32::from_le_bytes([*x, *y, *z, *w]) as i64,
                // `allowed` holds integer types only: the rest are 8-byte chunks.
                _ => b.try_into().map_or(0, i64::from_le_bytes),
            };
        }
        Ok(())
    })
}

/// A tensor's elements as f32, in logical order (ggml's test tensor_to_float). Storage is
/// checked before anything is allocated; a tensor without elements reads as none.
pub fn tensor_to_f32(t: &Tensor) -> Result<Vec<f32>> {
    storage_for_read("toFloat32", t, 0, t.nbytes())?;
    if t.is_empty() {
        return Ok(Vec::new());
    }
    gather_f32(t, &tensor_read(t, 0, t.nbytes())?)
}

/// tensor_to_f32 for code running inside a compute that owns the buffers.
pub fn tensor_to_f32_in_compute(t: &Tensor) -> Result<Vec<f32>> {
    storage_unguarded("toFloat32", t, 0, t.nbytes())?;
    if t.is_empty() {
        return Ok(Vec::new());
    }
    gather_f32(t, &tensor_read_in_compute(t, 0, t.nbytes())?)
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
    storage_for("fromFloat32", t, 0, t.nbytes())?;
    if n == 0 {
        return Ok(());
    }
    let (ne, nb, ty) = (t.ne(), t.nb(), t.ty());
    let n0 = ne[0].max(0) as usize;
    let row_bytes = ty.row_size(n0);
    if t.is_contiguous() {
        let mut bytes = try_vec("fromFloat32", t.nbytes())?;
        for (r, chunk) in values.chunks(n0.max(1)).enumerate() {
            crate::types::convert::row_from_f32(ty, chunk, &mut bytes[r * row_bytes..(r + 1) * row_bytes])?;
        }
        return tensor_set(t, &bytes, 0);
    }
    // Strided: read-modify-write the span so bytes between elements keep their values.
    check_block_stride("fromFloat32", t)?;
    let mut span = tensor_read(t, 0, t.nbytes())?;
    let packed = nb[0] == ty.type_size();
    let es = ty.type_size();
    let mut row = try_vec("fromFloat32", row_bytes)?;
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
