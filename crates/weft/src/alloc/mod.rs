//! Allocators, as ggml-alloc has them: a context's tensors into one buffer
//! (alloc_ctx_tensors), and the graph allocator that plans intermediate memory by liveness.

mod ctx_tensors;
mod free_blocks;
mod gallocr;

pub use ctx_tensors::{alloc_ctx_tensors, alloc_ctx_tensors_from_buft, alloc_tensors, CtxBuffers};
pub use gallocr::GraphAllocator;

pub(crate) fn align_up(x: usize, align: usize) -> usize {
    x.div_ceil(align) * align
}
