//! graph_reset on memory that is not the host's: a buffer type without a host pointer (as a
//! GPU backend's), whose bytes can only be reached through `Buffer::write/read/fill`.

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::fd::{get, param};
use weft::alloc::alloc_ctx_tensors_from_buft;
use weft::backend::{check_range, Buffer, BufferState, BufferType};
use weft::Result;

/// A "device" buffer type: bytes behind a lock, no host pointer, writes counted.
struct Foreign {
    writes: Arc<AtomicUsize>,
}

struct ForeignBuffer {
    bytes: Mutex<Vec<u8>>,
    writes: Arc<AtomicUsize>,
    state: BufferState,
}

impl BufferType for Foreign {
    fn name(&self) -> String {
        "Foreign".into()
    }
    fn alloc_buffer(&self, size: usize) -> Result<Arc<dyn Buffer>> {
        // Garbage to start with: reset must write every gradient.
        let bytes = Mutex::new(vec![0x7f; size]);
        Ok(Arc::new(ForeignBuffer { bytes, writes: self.writes.clone(), state: BufferState::default() }))
    }
    fn alignment(&self) -> usize {
        32
    }
    fn is_host(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Buffer for ForeignBuffer {
    fn buffer_type(&self) -> Arc<dyn BufferType> {
        Arc::new(Foreign { writes: self.writes.clone() })
    }
    fn size(&self) -> usize {
        self.bytes.lock().unwrap().len()
    }
    fn host_ptr(&self) -> Option<*mut u8> {
        None
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        let mut b = self.bytes.lock().unwrap();
        check_range("write", "Foreign", b.len(), offset, data.len())?;
        b[offset..offset + data.len()].copy_from_slice(data);
        self.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let b = self.bytes.lock().unwrap();
        check_range("read", "Foreign", b.len(), offset, out.len())?;
        out.copy_from_slice(&b[offset..offset + out.len()]);
        Ok(())
    }
    fn fill(&self, offset: usize, value: u8, size: usize) -> Result<()> {
        let mut b = self.bytes.lock().unwrap();
        check_range("fill", "Foreign", b.len(), offset, size)?;
        b[offset..offset + size].fill(value);
        self.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn state(&self) -> &BufferState {
        &self.state
    }
    fn release(&self) -> Result<()> {
        Ok(())
    }
    fn is_released(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[test]
fn reset_writes_through_the_buffer_interface() {
    let ctx = crate::fd::meta_ctx();
    let x = param(&ctx, "x", &[3, 2]);
    // A permuted gradient (a strided view) and an accumulating one, besides plain ones.
    let loss = ctx.sum(&ctx.sqr(&ctx.transpose(&x).unwrap()).unwrap()).unwrap();
    let (_, gb, loss) = crate::fd::graphs(&ctx, &loss, true);
    let writes = Arc::new(AtomicUsize::new(0));
    let _buffers = alloc_ctx_tensors_from_buft(&ctx, &Foreign { writes: writes.clone() }).unwrap();
    gb.reset().unwrap();
    assert!(writes.load(Ordering::Relaxed) > 0);
    assert_eq!(get(&loss.grad().unwrap()), vec![1.0]);
    let mut zeroed = 0;
    for n in gb.nodes().iter().filter(|n| !n.ptr_eq(&loss)) {
        if let Some(g) = n.grad() {
            assert!(get(&g).iter().all(|&v| v == 0.0), "gradient of '{}' ({:?})", n.name(), g);
            zeroed += 1;
        }
    }
    assert!(zeroed >= 3, "x, its transpose and the square have gradients");
}
