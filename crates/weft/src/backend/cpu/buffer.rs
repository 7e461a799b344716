//! Host memory buffers: one aligned, zero-initialized allocation each.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::any::Any;
use std::sync::{Arc, OnceLock};

use crate::backend::{check_range, Buffer, BufferState, BufferType};
use crate::{Error, Result};

/// Tensor offsets inside CPU buffers are multiples of this (ggml's TENSOR_ALIGNMENT).
pub const CPU_TENSOR_ALIGNMENT: usize = 32;
/// Allocations start at a cache line, so SIMD loads of aligned tensors never split one.
const BASE_ALIGN: usize = 64;

pub struct CpuBufferType;

impl CpuBufferType {
    pub fn get() -> Arc<dyn BufferType> {
        static BUFT: OnceLock<Arc<CpuBufferType>> = OnceLock::new();
        BUFT.get_or_init(|| Arc::new(CpuBufferType)).clone()
    }
}

impl BufferType for CpuBufferType {
    fn name(&self) -> String {
        "CPU".into()
    }
    fn alloc_buffer(&self, size: usize) -> Result<Arc<dyn Buffer>> {
        Ok(Arc::new(CpuBuffer::new(size)?))
    }
    fn alignment(&self) -> usize {
        CPU_TENSOR_ALIGNMENT
    }
    fn max_size(&self) -> usize {
        isize::MAX as usize / 2
    }
    fn is_host(&self) -> bool {
        true
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct CpuBuffer {
    ptr: *mut u8,
    size: usize,
    layout: Layout,
    state: BufferState,
}

// The buffer is a plain allocation; concurrent access is coordinated by the graph
// (kernels write disjoint rows) and by BufferState's in-use count for JS access.
unsafe impl Send for CpuBuffer {}
unsafe impl Sync for CpuBuffer {}

impl CpuBuffer {
    pub fn new(size: usize) -> Result<CpuBuffer> {
        let layout = Layout::from_size_align(size.max(1), BASE_ALIGN)
            .map_err(|_| Error::oom(format!("CPU: cannot allocate a buffer of {size} bytes")))?;
        // SAFETY: layout has a nonzero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::oom(format!("CPU: out of memory allocating a buffer of {size} bytes")));
        }
        Ok(CpuBuffer { ptr, size, layout, state: BufferState::default() })
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

impl Buffer for CpuBuffer {
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        CpuBufferType::get()
    }
    fn size(&self) -> usize {
        self.size
    }
    fn host_ptr(&self) -> Option<*mut u8> {
        Some(self.ptr)
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        check_range("CPU buffer write", "CPU", self.size, offset, data.len())?;
        // SAFETY: range checked above; source and destination cannot overlap (data is a
        // caller's slice, which may alias this buffer only through a shared reference).
        unsafe { std::ptr::copy(data.as_ptr(), self.ptr.add(offset), data.len()) };
        Ok(())
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        check_range("CPU buffer read", "CPU", self.size, offset, out.len())?;
        // SAFETY: range checked above.
        unsafe { std::ptr::copy(self.ptr.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
    fn fill(&self, offset: usize, value: u8, size: usize) -> Result<()> {
        check_range("CPU buffer fill", "CPU", self.size, offset, size)?;
        // SAFETY: range checked above.
        unsafe { std::ptr::write_bytes(self.ptr.add(offset), value, size) };
        Ok(())
    }
    fn copy_from(&self, src: &dyn Buffer, src_offset: usize, dst_offset: usize, size: usize) -> Result<bool> {
        // Host to host: one memcpy. Other sources go through the generic path.
        let Some(sp) = src.host_ptr() else {
            return Ok(false);
        };
        check_range("CPU buffer copy", &src.name(), src.size(), src_offset, size)?;
        check_range("CPU buffer copy", "CPU", self.size, dst_offset, size)?;
        // SAFETY: both ranges checked; ptr::copy allows overlap.
        unsafe { std::ptr::copy(sp.add(src_offset), self.ptr.add(dst_offset), size) };
        Ok(true)
    }
    fn state(&self) -> &BufferState {
        &self.state
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
