//! ggml_backend_alloc_ctx_tensors: every not-yet-allocated tensor of a context placed in
//! buffers of one type, packed in creation order (split when a buffer type has a maximum
//! size). Views need nothing: they take their memory from their base tensor.

use std::sync::Arc;

use super::align_up;
use crate::backend::{Backend, Buffer, BufferType, BufferUsage};
use crate::context::Context;
use crate::tensor::Tensor;
use crate::{Error, Result};

/// The buffers alloc_ctx_tensors made (ggml returns one "multi buffer").
#[derive(Clone, Default)]
pub struct CtxBuffers {
    pub buffers: Vec<Arc<dyn Buffer>>,
}

impl CtxBuffers {
    pub fn size(&self) -> usize {
        self.buffers.iter().map(|b| b.size()).sum()
    }
    pub fn set_usage(&self, usage: BufferUsage) {
        self.buffers.iter().for_each(|b| b.set_usage(usage));
    }
    pub fn clear(&self, value: u8) -> Result<()> {
        self.buffers.iter().try_for_each(|b| b.clear(value))
    }
    pub fn is_empty(&self) -> bool {
        self.buffers.is_empty()
    }
}

pub fn alloc_ctx_tensors(ctx: &Context, backend: &dyn Backend) -> Result<CtxBuffers> {
    alloc_ctx_tensors_from_buft(ctx, backend.default_buffer_type().as_ref())
}

pub fn alloc_ctx_tensors_from_buft(ctx: &Context, buft: &dyn BufferType) -> Result<CtxBuffers> {
    if !ctx.no_alloc() {
        return Err(Error::invalid("allocCtxTensors: the context must be created with noAlloc: true"));
    }
    alloc_tensors(&ctx.tensors(), buft)
}

/// Place the unallocated, non-view tensors of a list in new buffers of `buft`, packed in
/// list order.
pub fn alloc_tensors(list: &[Tensor], buft: &dyn BufferType) -> Result<CtxBuffers> {
    let align = buft.alignment();
    let max = buft.max_size();
    // Group tensors into runs that fit one buffer each.
    let mut groups: Vec<(Vec<Tensor>, usize)> = vec![(Vec::new(), 0)];
    for t in list.iter().cloned() {
        if t.is_allocated() || t.is_view() {
            continue;
        }
        let size = align_up(buft.alloc_size(&t), align);
        if size > max {
            return Err(Error::oom(format!(
                "allocCtxTensors: tensor '{}' ({size} bytes) is larger than a {} buffer can be ({max} bytes)",
                t.label(),
                buft.name()
            )));
        }
        let cur = groups.last_mut().expect("groups is never empty");
        if cur.1 + size > max {
            groups.push((vec![t], size));
        } else {
            cur.0.push(t);
            cur.1 += size;
        }
    }
    let mut out = CtxBuffers::default();
    for (tensors, total) in groups {
        if tensors.is_empty() {
            continue;
        }
        let buffer = buft.alloc_buffer(total)?;
        let mut offset = 0;
        for t in tensors {
            t.bind(buffer.clone(), offset)?;
            offset += align_up(buft.alloc_size(&t), align);
        }
        out.buffers.push(buffer);
    }
    Ok(out)
}
