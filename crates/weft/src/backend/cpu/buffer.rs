//! Host memory buffers: zero-initialized memory (an aligned heap allocation, or an anonymous
//! map for large ones), or a private map of a file's bytes (ggml_backend_cpu_buffer_from_ptr
//! over llama.cpp's model map).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::any::Any;
use std::fs::File;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use memmap2::{MmapMut, MmapOptions};

use crate::backend::{check_range, Buffer, BufferState, BufferType};
use crate::mapped::MappedFile;
use crate::{Error, ErrorKind, Result};

/// Tensor offsets inside CPU buffers are multiples of this (ggml's TENSOR_ALIGNMENT).
pub const CPU_TENSOR_ALIGNMENT: usize = 32;
/// Allocations start at a cache line, so SIMD loads of aligned tensors never split one.
const BASE_ALIGN: usize = 64;
/// From this size on, buffers are anonymous maps: zero pages the kernel commits only when
/// touched, so a graph allocator's worst-case reservation costs memory only for what the
/// graphs use (an aligned zeroed heap allocation is written through, committing it all).
const ANON_MAP_MIN: usize = 1 << 20;

/// From this size on, an anonymous map asks for transparent huge pages (madvise; a hint the
/// kernel may ignore). Weights are streamed once per token: with 2 MiB pages a 60 MB matrix
/// needs 30 TLB entries, not 15 000 page walks. MUL_MAT 4096x14336 n=1, old and new build
/// alternating in one process: 2-5% faster for q8_0, q5_0, q3_K, iq4_xs and f16, same bits.
/// The cost is commit granularity: a touched byte commits its 2 MiB page.
const HUGE_PAGE_MIN: usize = 8 << 20;

/// The type of ordinary CPU buffers ("CPU").
pub struct CpuBufferType;

impl CpuBufferType {
    pub fn get() -> Arc<dyn BufferType> {
        static BUFT: OnceLock<Arc<CpuBufferType>> = OnceLock::new();
        BUFT.get_or_init(|| Arc::new(CpuBufferType)).clone()
    }
}

/// The type of CPU buffers over a mapped file ("CPU_Mapped", as ggml names it). New buffers
/// of this type are ordinary allocations, as in ggml; mapped ones come from
/// [`CpuBuffer::map_file`].
pub struct CpuMappedBufferType;

impl CpuMappedBufferType {
    pub fn get() -> Arc<dyn BufferType> {
        static BUFT: OnceLock<Arc<CpuMappedBufferType>> = OnceLock::new();
        BUFT.get_or_init(|| Arc::new(CpuMappedBufferType)).clone()
    }
}

/// What both CPU buffer types share (ggml gives them the same functions).
macro_rules! cpu_buffer_type {
    ($t:ty, $name:literal) => {
        impl BufferType for $t {
            fn name(&self) -> String {
                $name.into()
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
    };
}
cpu_buffer_type!(CpuBufferType, "CPU");
cpu_buffer_type!(CpuMappedBufferType, "CPU_Mapped");

/// Who owns a CPU buffer's memory, so release frees it the right way. The maps are held
/// only so that dropping them unmaps the memory.
enum Backing {
    Heap(Layout),
    Anon(#[allow(dead_code)] MmapMut),
    File(#[allow(dead_code)] MappedFile),
}

pub struct CpuBuffer {
    /// Null once released.
    ptr: AtomicPtr<u8>,
    size: usize,
    backing: Mutex<Option<Backing>>,
    state: BufferState,
}

// The buffer is plain host memory; concurrent access is coordinated by the graph (kernels
// write disjoint rows) and by BufferState's in-use count for JS access.
unsafe impl Send for CpuBuffer {}
unsafe impl Sync for CpuBuffer {}

impl CpuBuffer {
    pub fn new(size: usize) -> Result<CpuBuffer> {
        if size >= ANON_MAP_MIN {
            if let Ok(mut map) = MmapOptions::new().len(size).map_anon() {
                if size >= HUGE_PAGE_MIN {
                    let _ = map.advise(memmap2::Advice::HugePage);
                }
                // Page-aligned, zero-filled.
                return Ok(CpuBuffer::with_backing(map.as_mut_ptr(), size, Backing::Anon(map)));
            }
        }
        let layout = Layout::from_size_align(size.max(1), BASE_ALIGN)
            .map_err(|_| Error::oom(format!("CPU: cannot allocate a buffer of {size} bytes")))?;
        // SAFETY: layout has a nonzero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::oom(format!("CPU: out of memory allocating a buffer of {size} bytes")));
        }
        Ok(CpuBuffer::with_backing(ptr, size, Backing::Heap(layout)))
    }

    /// `len` bytes of `file` from `offset`, mapped privately (copy-on-write): the pages are
    /// the page cache's until something writes to them, so tensors in this buffer take no
    /// memory of their own, and a write (a graph updating a weight in place, tensor.set)
    /// changes this process's copy only, never the file. The start must be aligned to
    /// CPU_TENSOR_ALIGNMENT, as ggml_backend_cpu_buffer_from_ptr asserts.
    ///
    /// As with any mapped file (llama.cpp maps models the same way), the file should not be
    /// truncated by another process while the buffer lives; if it is, reads of the lost pages
    /// give zeros instead of killing the process (`crate::mapped`).
    pub fn map_file(file: &File, offset: u64, len: usize) -> Result<CpuBuffer> {
        let file_len = file.metadata()?.len();
        let end = offset.checked_add(len as u64);
        if len == 0 || end.is_none_or(|e| e > file_len) {
            return Err(Error::invalid(format!(
                "CPU_Mapped: bytes {offset}..{} are not a nonempty range of the {file_len}-byte file",
                offset.saturating_add(len as u64)
            )));
        }
        let cannot =
            |why: String| Error::new(ErrorKind::Io, format!("CPU_Mapped: cannot map {len} bytes at {offset}: {why}"));
        let mut map = MappedFile::map_private(file, offset, len)
            .map_err(|e| cannot(e.to_string()))?
            .ok_or_else(|| cannot("too many mapped files are open".into()))?;
        let ptr = map.as_mut_ptr().ok_or_else(|| cannot("the map is read-only".into()))?;
        if !(ptr as usize).is_multiple_of(CPU_TENSOR_ALIGNMENT) {
            return Err(Error::invalid(format!(
                "CPU_Mapped: offset {offset} gives a start not aligned to {CPU_TENSOR_ALIGNMENT} bytes"
            )));
        }
        Ok(CpuBuffer::with_backing(ptr, len, Backing::File(map)))
    }

    fn with_backing(ptr: *mut u8, size: usize, backing: Backing) -> CpuBuffer {
        CpuBuffer { ptr: AtomicPtr::new(ptr), size, backing: Mutex::new(Some(backing)), state: BufferState::default() }
    }

    /// Whether this buffer maps a file.
    pub fn is_mapped(&self) -> bool {
        matches!(*self.backing.lock().unwrap_or_else(|e| e.into_inner()), Some(Backing::File(_)))
    }

    /// The live base pointer, or an error once released.
    fn live(&self, what: &str) -> Result<*mut u8> {
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            return Err(Error::invalid(format!("{what}: the CPU buffer has been released (disposed)")));
        }
        Ok(p)
    }

    fn free(&self) {
        let p = self.ptr.swap(std::ptr::null_mut(), Ordering::AcqRel);
        let backing = self.backing.lock().unwrap_or_else(|e| e.into_inner()).take();
        match backing {
            // SAFETY: allocated in new() with this layout; taken out exactly once.
            Some(Backing::Heap(layout)) if !p.is_null() => unsafe { dealloc(p, layout) },
            // Dropping the map unmaps it.
            _ => drop(backing),
        }
    }
}

impl Drop for CpuBuffer {
    fn drop(&mut self) {
        self.free();
    }
}

impl Buffer for CpuBuffer {
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        if self.is_mapped() {
            CpuMappedBufferType::get()
        } else {
            CpuBufferType::get()
        }
    }
    fn size(&self) -> usize {
        self.size
    }
    fn is_host(&self) -> bool {
        // Both CPU buffer types are host memory (skips buffer_type's lock and Arc per node).
        true
    }
    fn host_ptr(&self) -> Option<*mut u8> {
        let p = self.ptr.load(Ordering::Acquire);
        (!p.is_null()).then_some(p)
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        check_range("CPU buffer write", "CPU", self.size, offset, data.len())?;
        let ptr = self.live("CPU buffer write")?;
        // SAFETY: range checked above; source and destination cannot overlap (data is a
        // caller's slice, which may alias this buffer only through a shared reference).
        unsafe { std::ptr::copy(data.as_ptr(), ptr.add(offset), data.len()) };
        Ok(())
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        check_range("CPU buffer read", "CPU", self.size, offset, out.len())?;
        let ptr = self.live("CPU buffer read")?;
        // SAFETY: range checked above.
        unsafe { std::ptr::copy(ptr.add(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
    fn fill(&self, offset: usize, value: u8, size: usize) -> Result<()> {
        check_range("CPU buffer fill", "CPU", self.size, offset, size)?;
        let ptr = self.live("CPU buffer fill")?;
        // SAFETY: range checked above.
        unsafe { std::ptr::write_bytes(ptr.add(offset), value, size) };
        Ok(())
    }
    fn copy_from(&self, src: &dyn Buffer, src_offset: usize, dst_offset: usize, size: usize) -> Result<bool> {
        // Host to host: one memcpy. Other sources go through the generic path.
        let Some(sp) = src.host_ptr() else {
            return Ok(false);
        };
        check_range("CPU buffer copy", &src.name(), src.size(), src_offset, size)?;
        check_range("CPU buffer copy", "CPU", self.size, dst_offset, size)?;
        let ptr = self.live("CPU buffer copy")?;
        // SAFETY: both ranges checked; ptr::copy allows overlap.
        unsafe { std::ptr::copy(sp.add(src_offset), ptr.add(dst_offset), size) };
        Ok(true)
    }
    fn state(&self) -> &BufferState {
        &self.state
    }
    fn release(&self) -> Result<()> {
        self.state.check_idle("dispose", &self.name())?;
        self.free();
        Ok(())
    }
    fn is_released(&self) -> bool {
        self.ptr.load(Ordering::Acquire).is_null()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_file(bytes: &[u8]) -> (std::path::PathBuf, File) {
        let path =
            std::env::temp_dir().join(format!("weft-map-{}-{:?}", std::process::id(), std::thread::current().id()));
        File::create(&path).unwrap().write_all(bytes).unwrap();
        let f = File::open(&path).unwrap();
        (path, f)
    }

    #[test]
    fn a_mapped_buffer_reads_the_file_and_writes_only_its_own_copy() {
        let bytes: Vec<u8> = (0..200u8).collect();
        let (path, f) = temp_file(&bytes);
        let b = CpuBuffer::map_file(&f, 64, 100).unwrap();
        assert!(b.is_mapped() && b.is_host());
        assert_eq!(b.name(), "CPU_Mapped");
        let mut out = [0u8; 4];
        b.read(0, &mut out).unwrap();
        assert_eq!(out, [64, 65, 66, 67]);
        b.write(1, &[9, 9]).unwrap();
        b.read(0, &mut out).unwrap();
        assert_eq!(out, [64, 9, 9, 67]);
        assert!(b.read(98, &mut out).is_err(), "reads past the mapped range are refused");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file is unchanged");
        b.release().unwrap();
        assert!(b.is_released() && b.host_ptr().is_none());
        assert!(b.read(0, &mut out).is_err());
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn large_buffers_are_zeroed_anonymous_maps() {
        let b = CpuBuffer::new(ANON_MAP_MIN + 3).unwrap();
        assert!(!b.is_mapped());
        assert_eq!(b.name(), "CPU");
        let mut out = [9u8; 3];
        b.read(ANON_MAP_MIN, &mut out).unwrap();
        assert_eq!(out, [0, 0, 0]);
        b.write(ANON_MAP_MIN, &[1, 2, 3]).unwrap();
        b.read(ANON_MAP_MIN, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        assert!((b.host_ptr().unwrap() as usize).is_multiple_of(BASE_ALIGN));
        b.release().unwrap();
        assert!(b.is_released());
    }

    #[test]
    fn mapping_refuses_bad_ranges_and_misaligned_starts() {
        let (path, f) = temp_file(&[0u8; 100]);
        assert!(CpuBuffer::map_file(&f, 0, 0).is_err());
        assert!(CpuBuffer::map_file(&f, 90, 20).is_err());
        assert!(CpuBuffer::map_file(&f, u64::MAX, 2).is_err());
        let e = CpuBuffer::map_file(&f, 8, 16).err().unwrap();
        assert!(e.message.contains("aligned"), "{}", e.message);
        std::fs::remove_file(path).unwrap();
    }
}
