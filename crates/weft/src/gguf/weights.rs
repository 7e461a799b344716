//! A model's weights from a GGUF file into a backend, as llama.cpp's loader does it: on a
//! host backend, tensors are bound in place in a private map of the file (no copy; pages
//! come from disk on first touch, or ahead of time with `prefetch`); elsewhere they are
//! allocated on the backend and uploaded in chunks. Progress is reported in bytes.

use std::sync::Arc;

use super::load::matching_info;
use super::{GgufFile, TensorInfo};
use crate::alloc::alloc_tensors;
use crate::backend::cpu::{CpuBuffer, CpuMappedBufferType, CPU_TENSOR_ALIGNMENT};
use crate::backend::{Backend, Buffer, BufferUsage, BusyGuard};
use crate::tensor::Tensor;
use crate::{Error, Result};

/// How [`load_weights`] loads.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Map the file where the backend computes on host memory (llama.cpp's use_mmap).
    pub mmap: bool,
    /// With mmap, read every page in now (so the first compute does not wait on the disk
    /// and progress means something); llama.cpp's MAP_POPULATE.
    pub prefetch: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { mmap: true, prefetch: true }
    }
}

/// What [`load_weights`] made.
pub struct LoadedWeights {
    pub buffers: Vec<Arc<dyn Buffer>>,
    /// Whether the tensors live in a map of the file rather than a copy.
    pub mapped: bool,
}

/// Bytes moved between progress reports.
const CHUNK: usize = 16 << 20;

/// Load the data of every tensor of `tensors` that is not allocated yet (and is not a view)
/// from `file`, matched by name (type and shape must agree), into `backend`. The buffers
/// are marked as holding weights. `progress(done, total)` is called in bytes as the work
/// advances, last with done == total.
pub fn load_weights(
    file: &GgufFile,
    tensors: &[Tensor],
    backend: &dyn Backend,
    options: LoadOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LoadedWeights> {
    let list: Vec<(Tensor, &TensorInfo)> = tensors
        .iter()
        .filter(|t| !t.is_allocated() && !t.is_view())
        .map(|t| Ok((t.clone(), matching_info(file, t)?)))
        .collect::<Result<_>>()?;
    let total: usize = list.iter().map(|(_, i)| i.size).sum();
    let mappable = options.mmap
        && file.file().is_some()
        && backend.supports_buft(CpuMappedBufferType::get().as_ref())
        && file.data_offset().is_multiple_of(CPU_TENSOR_ALIGNMENT)
        && list.iter().all(|(_, i)| i.offset.is_multiple_of(CPU_TENSOR_ALIGNMENT as u64));
    let loaded = if mappable && total > 0 {
        let buffer = map_tensors(file, &list)?;
        if options.prefetch {
            let _busy = BusyGuard::for_tensors(list.iter().map(|(t, _)| t))?;
            prefetch(buffer.as_ref(), &list, total, progress)?;
        }
        LoadedWeights { buffers: vec![buffer], mapped: true }
    } else {
        let tensors: Vec<Tensor> = list.iter().map(|(t, _)| t.clone()).collect();
        let buffers = alloc_tensors(&tensors, backend.default_buffer_type().as_ref())?.buffers;
        let _busy = BusyGuard::for_tensors(&tensors)?;
        upload(file, &list, total, progress)?;
        LoadedWeights { buffers, mapped: false }
    };
    loaded.buffers.iter().for_each(|b| b.set_usage(BufferUsage::Weights));
    progress(total, total);
    Ok(loaded)
}

/// One CPU_Mapped buffer over the file's data section with each tensor bound at its place
/// (llama.cpp: ggml_backend_cpu_buffer_from_ptr over the mapping, ggml_backend_tensor_alloc
/// per tensor).
fn map_tensors(file: &GgufFile, list: &[(Tensor, &TensorInfo)]) -> Result<Arc<dyn Buffer>> {
    let f = file.file().ok_or_else(|| Error::invalid("gguf: only a file opened from disk can be mapped"))?;
    let end = list.iter().map(|(_, i)| i.offset as usize + i.size).max().unwrap_or(0);
    let buffer: Arc<dyn Buffer> = Arc::new(CpuBuffer::map_file(f, file.data_offset() as u64, end)?);
    for (t, info) in list {
        t.bind(buffer.clone(), info.offset as usize)?;
    }
    Ok(buffer)
}

/// Touch every page of the mapped tensors so the kernel reads them from disk now.
fn prefetch(
    buffer: &dyn Buffer,
    list: &[(Tensor, &TensorInfo)],
    total: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let base = buffer.host_ptr().ok_or_else(|| Error::invalid("gguf: the mapped buffer was released"))?;
    const PAGE: usize = 4096;
    let mut done = 0;
    for (_, info) in list {
        let (start, len) = (info.offset as usize, info.size);
        let mut sum = 0u8;
        let mut pos = 0;
        while pos < len {
            let step = (len - pos).min(CHUNK);
            let mut p = pos;
            while p < pos + step {
                // SAFETY: start + p lies inside the mapped range (checked when mapping:
                // the map covers every tensor's bytes); a volatile read keeps the load.
                sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(base.add(start + p)) });
                p += PAGE;
            }
            pos += step;
            done += step;
            progress(done, total);
        }
        std::hint::black_box(sum);
    }
    Ok(())
}

/// Copy each tensor's bytes from the file into its (already allocated) buffer, in chunks.
fn upload(
    file: &GgufFile,
    list: &[(Tensor, &TensorInfo)],
    total: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<()> {
    let mut done = 0;
    for (t, info) in list {
        let data = file.tensor_data(info);
        let s = t.storage().ok_or_else(|| Error::invalid(format!("gguf: tensor '{}' is not allocated", t.label())))?;
        for (k, chunk) in data.chunks(CHUNK).enumerate() {
            s.buffer.write(s.offset + k * CHUNK, chunk)?;
            done += chunk.len();
            progress(done, total);
        }
    }
    Ok(())
}
