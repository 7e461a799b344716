//! Device memory: storage buffers a shader can bind whole. wgpu moves data in 4-byte
//! words (offsets and sizes of writes, copies and maps), so buffers are padded to 4 bytes
//! and unaligned edges are read, patched and written back.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::context::GpuContext;
use crate::backend::{check_range, Buffer, BufferState, BufferType};
use crate::{Error, Result};

/// wgpu's COPY_BUFFER_ALIGNMENT.
const WORD: usize = 4;
/// Non-zero fills are written in chunks of this many bytes, to bound host memory.
const FILL_CHUNK: usize = 4 << 20;

fn align_down(x: usize) -> usize {
    x - x % WORD
}

pub struct WebGpuBufferType {
    ctx: Arc<GpuContext>,
}

impl WebGpuBufferType {
    pub fn new(ctx: Arc<GpuContext>) -> WebGpuBufferType {
        WebGpuBufferType { ctx }
    }
    pub fn ctx(&self) -> &Arc<GpuContext> {
        &self.ctx
    }
}

impl BufferType for WebGpuBufferType {
    fn name(&self) -> String {
        self.ctx.name.clone()
    }
    fn alloc_buffer(&self, size: usize) -> Result<Arc<dyn Buffer>> {
        Ok(Arc::new(WebGpuBuffer::new(self.ctx.clone(), size)?))
    }
    /// Tensors start at offsets a storage binding may start at, so most bind as they are.
    fn alignment(&self) -> usize {
        self.ctx.limits.min_storage_buffer_offset_alignment.max(WORD as u32) as usize
    }
    /// Any one buffer (and so any tensor) must fit a single storage binding.
    fn max_size(&self) -> usize {
        let l = &self.ctx.limits;
        let max = l.max_buffer_size.min(l.max_storage_buffer_binding_size);
        align_down(usize::try_from(max).unwrap_or(usize::MAX))
    }
    fn is_host(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub struct WebGpuBuffer {
    ctx: Arc<GpuContext>,
    buffer: wgpu::Buffer,
    size: usize,
    state: BufferState,
    /// Set by release(): the GPU memory is destroyed and every access is an error.
    released: AtomicBool,
}

impl WebGpuBuffer {
    pub fn new(ctx: Arc<GpuContext>, size: usize) -> Result<WebGpuBuffer> {
        let max = WebGpuBufferType::new(ctx.clone()).max_size();
        if size > max {
            return Err(Error::oom(format!(
                "{}: cannot allocate a buffer of {size} bytes (at most {max} bytes per buffer)",
                ctx.name
            )));
        }
        let buffer = ctx.scoped(&format!("allocating {size} bytes"), || {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("weft tensors"),
                size: size.next_multiple_of(WORD).max(WORD) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        // WebGPU zero-initializes buffers, as CPU buffers are.
        Ok(WebGpuBuffer { ctx, buffer, size, state: BufferState::default(), released: AtomicBool::new(false) })
    }

    pub fn ctx(&self) -> &GpuContext {
        &self.ctx
    }
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }
    /// The allocated size: `size()` rounded up to whole words.
    pub fn padded_size(&self) -> usize {
        self.buffer.size() as usize
    }

    /// Read whole words `[start, start + len)` (both multiples of 4) through a staging
    /// buffer mapped for reading.
    fn read_words(&self, start: usize, len: usize) -> Result<Vec<u8>> {
        let ctx = &self.ctx;
        let what = format!("{}: reading {len} bytes", ctx.name);
        let staging = ctx.scoped(&what, || {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("weft read staging"),
                size: len as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        // One wait for both: the map is served once the copy's submission has completed.
        ctx.submit(&what, false, |e| e.copy_buffer_to_buffer(&self.buffer, start as u64, &staging, 0, len as u64))?;

        let (tx, rx) = std::sync::mpsc::channel();
        ctx.scoped(&what, || staging.map_async(wgpu::MapMode::Read, .., move |r| drop(tx.send(r))))?;
        ctx.wait(&what, None)?;
        rx.recv()
            .map_err(|_| Error::backend(format!("{what}: the map callback never ran")))?
            .map_err(|e| Error::backend(format!("{what}: mapping failed: {e}")))?;
        let data = {
            let view =
                staging.get_mapped_range(..).map_err(|e| Error::backend(format!("{what}: mapped range: {e}")))?;
            view.to_vec()
        };
        staging.unmap();
        Ok(data)
    }

    /// Queue a write of whole words at a word offset (done before the next submission).
    fn write_words(&self, start: usize, data: &[u8]) -> Result<()> {
        let what = format!("{}: writing {} bytes", self.ctx.name, data.len());
        self.ctx.scoped(&what, || self.ctx.queue.write_buffer(&self.buffer, start as u64, data))
    }

    fn check(&self, what: &str, offset: usize, len: usize) -> Result<()> {
        if self.is_released() {
            return Err(Error::invalid(format!("{what}: buffer '{}' has been released (disposed)", self.ctx.name)));
        }
        check_range(what, &self.ctx.name, self.size, offset, len)
    }
}

impl Buffer for WebGpuBuffer {
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        Arc::new(WebGpuBufferType::new(self.ctx.clone()))
    }
    fn size(&self) -> usize {
        self.size
    }
    fn host_ptr(&self) -> Option<*mut u8> {
        None
    }

    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check("WebGPU buffer write", offset, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let end = offset + data.len();
        let (start, stop) = (align_down(offset), end.next_multiple_of(WORD));
        if (start, stop) == (offset, end) {
            return self.write_words(offset, data);
        }
        // Patch the data into its whole words: keep the bytes around it that the edge
        // words share with neighbouring data.
        let mut words = vec![0u8; stop - start];
        if offset != start {
            words[..WORD].copy_from_slice(&self.read_words(start, WORD)?);
        }
        if end != stop {
            words[stop - start - WORD..].copy_from_slice(&self.read_words(stop - WORD, WORD)?);
        }
        words[offset - start..end - start].copy_from_slice(data);
        self.write_words(start, &words)
    }

    fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check("WebGPU buffer read", offset, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let start = align_down(offset);
        let stop = (offset + out.len()).next_multiple_of(WORD);
        let words = self.read_words(start, stop - start)?;
        out.copy_from_slice(&words[offset - start..offset - start + out.len()]);
        Ok(())
    }

    fn fill(&self, offset: usize, value: u8, size: usize) -> Result<()> {
        self.check("WebGPU buffer fill", offset, size)?;
        let end = offset + size;
        // Unaligned edges go through write's read-modify-write; the whole words between
        // are cleared on the device (zero) or written in chunks.
        let mid_start = offset.next_multiple_of(WORD).min(end);
        let mid_end = align_down(end).max(mid_start);
        if mid_start > offset {
            self.write(offset, &vec![value; mid_start - offset])?;
        }
        if end > mid_end {
            self.write(mid_end, &vec![value; end - mid_end])?;
        }
        if mid_end == mid_start {
            return Ok(());
        }
        if value == 0 {
            let what = format!("{}: clearing {} bytes", self.ctx.name, mid_end - mid_start);
            let range = (mid_start as u64, (mid_end - mid_start) as u64);
            return self.ctx.submit(&what, false, |e| e.clear_buffer(&self.buffer, range.0, Some(range.1)));
        }
        let chunk = vec![value; FILL_CHUNK.min(mid_end - mid_start)];
        let mut at = mid_start;
        while at < mid_end {
            let n = chunk.len().min(mid_end - at);
            self.write_words(at, &chunk[..n])?;
            at += n;
        }
        Ok(())
    }

    /// Device-side copy between buffers of the same device; Ok(false) (the caller goes
    /// through host memory) for other buffers, within one buffer, and unaligned ranges.
    fn copy_from(&self, src: &dyn Buffer, src_offset: usize, dst_offset: usize, size: usize) -> Result<bool> {
        let Some(s) = src.as_any().downcast_ref::<WebGpuBuffer>() else {
            return Ok(false);
        };
        if !GpuContext::same(&s.ctx, &self.ctx) || std::ptr::eq(s, self) {
            return Ok(false);
        }
        check_range("WebGPU buffer copy", &s.ctx.name, s.size, src_offset, size)?;
        self.check("WebGPU buffer copy", dst_offset, size)?;
        if !(src_offset | dst_offset | size).is_multiple_of(WORD) {
            return Ok(false);
        }
        if size == 0 {
            return Ok(true);
        }
        let what = format!("{}: copying {size} bytes", self.ctx.name);
        let (so, d_o, n) = (src_offset as u64, dst_offset as u64, size as u64);
        self.ctx.submit(&what, false, |e| e.copy_buffer_to_buffer(&s.buffer, so, &self.buffer, d_o, n))?;
        Ok(true)
    }

    fn release(&self) -> Result<()> {
        self.state.check_idle("dispose", &self.ctx.name)?;
        if !self.released.swap(true, Ordering::AcqRel) {
            self.buffer.destroy();
        }
        Ok(())
    }
    fn is_released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }
    fn state(&self) -> &BufferState {
        &self.state
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
