//! What every WebGPU kernel shares: tensors turned into buffer bindings plus the layout
//! numbers its shader needs, the params block, and the dispatch grid.
//!
//! Shaders index tensors in elements: ne and nb/element-size go into the params block as
//! a `Layout`, and each tensor is bound at its byte offset aligned down to the device's
//! storage alignment, with the remaining elements passed as the tensor's element offset
//! (ggml-webgpu does the same), so views at any element offset work.

pub mod adamw;
pub mod binary;
pub mod conv;
pub mod cpy;
pub mod elementwise;
pub mod flash_attn;
pub mod get_rows;
pub mod index;
pub mod loops;
pub mod loss;
pub mod matmul;
pub mod mul_mat_id;
pub mod norm;
pub mod out_prod;
pub mod pool;
pub mod quant;
pub mod recurrent;
pub mod reduce;
pub mod softmax;
pub mod unary;
pub mod window;
// ROPE/ROPE_BACK, the placing layout ops, ARANGE/TIMESTEP_EMBEDDING, ADD_REL_POS.
pub mod generate;
pub mod place;
pub mod rel_pos;
pub mod rope;

use super::buffer::WebGpuBuffer;
use super::context::GpuContext;
use super::pipeline::PipelineKey;
use crate::tensor::{Tensor, MAX_DIMS};
use crate::types::Type;
use crate::{Error, Result};

/// Invocations per workgroup of elementwise shaders (WebGPU guarantees 256).
pub const WG_ELEMENTWISE: u32 = 256;
/// Invocations per workgroup of the one-row-per-workgroup shaders: rows are often short,
/// and barriers are costly on software rasterizers.
pub const WG_ROWS: u32 = 64;

/// A kernel: whether it can compute a node (types, layouts), and the dispatch that does.
/// `plan` returns None for nodes that compute nothing (views).
#[derive(Clone, Copy)]
pub struct Kernel {
    pub supports: fn(&Tensor) -> bool,
    pub plan: fn(&Tensor, &GpuContext) -> Result<Option<Dispatch>>,
}

/// One compute dispatch, ready to encode.
pub struct Dispatch {
    pub key: PipelineKey,
    /// The uniform block at @binding(0), as 32-bit words in the WGSL struct's order.
    pub params: Vec<u32>,
    pub bindings: Vec<Binding>,
    pub groups: [u32; 3],
}

/// A storage buffer range at `@binding(binding)`.
pub struct Binding {
    pub binding: u32,
    pub buffer: wgpu::Buffer,
    pub offset: u64,
    pub size: u64,
}

/// A tensor as a shader sees it.
pub struct Arg {
    pub binding: Binding,
    /// Index of the tensor's first element inside the binding.
    pub elem_offset: u32,
    /// ne, then nb in elements: the WGSL `Layout` struct.
    pub layout: [u32; 2 * MAX_DIMS],
    pub nelements: u32,
}

/// Shapes and strides fit u32 indices and strides are whole elements: what every shader
/// here assumes. Strides known at graph build time; offsets are checked when binding.
pub fn indexable(t: &Tensor) -> bool {
    let es = t.ty().type_size();
    t.ty().blck_size() == 1
        && t.nb().iter().all(|&nb| nb % es == 0 && nb / es <= u32::MAX as usize)
        && t.nelements() <= u32::MAX as i64
        && t.nbytes() / es <= u32::MAX as usize
}

pub fn is_f32(t: Option<&Tensor>) -> bool {
    t.is_some_and(|t| t.ty() == Type::F32 && indexable(t))
}

/// Whether `t`'s bytes, bound from its offset aligned down to the storage alignment, fit
/// one storage binding of the device (128 MiB on lavapipe). Unallocated tensors are
/// judged by their size alone (the slack is at most one alignment unit).
pub fn fits_binding(ctx: &GpuContext, t: &Tensor) -> bool {
    let align = ctx.limits.min_storage_buffer_offset_alignment.max(4) as u64;
    (t.nbytes() as u64).saturating_add(align) <= ctx.limits.max_storage_buffer_binding_size
}

/// Source `i` of a node; constructors guarantee it, a missing one is still an Error.
pub fn src(node: &Tensor, i: usize) -> Result<&Tensor> {
    node.src(i).ok_or_else(|| Error::invalid(format!("{} node '{}' has no src[{i}]", node.op().name(), node.label())))
}

/// The range of `t`'s device buffer to bind at `@binding(binding)`: its bytes from its
/// offset aligned down to the storage alignment, rounded up to whole 32-bit words (buffers
/// are padded to 4 bytes, so the rounding stays inside); and the byte of `t`'s start in it.
pub fn bind_range(ctx: &GpuContext, t: &Tensor, binding: u32) -> Result<(Binding, usize)> {
    let s = t.storage().ok_or_else(|| Error::invalid(format!("WebGPU: tensor '{}' is not allocated", t.label())))?;
    let buf =
        s.buffer.as_any().downcast_ref::<WebGpuBuffer>().filter(|b| std::ptr::eq(b.ctx(), ctx)).ok_or_else(|| {
            Error::invalid(format!(
                "WebGPU: tensor '{}' lives in buffer '{}', not in memory of this device",
                t.label(),
                s.buffer.name()
            ))
        })?;
    if crate::backend::Buffer::is_released(buf) {
        return Err(Error::invalid(format!("WebGPU: tensor '{}' lives in a released (disposed) buffer", t.label())));
    }
    let align = ctx.limits.min_storage_buffer_offset_alignment.max(4) as usize;
    let start = s.offset - s.offset % align;
    let end = (s.offset + t.nbytes()).next_multiple_of(4).min(buf.padded_size());
    let range = Binding { binding, buffer: buf.raw().clone(), offset: start as u64, size: (end - start).max(4) as u64 };
    Ok((range, s.offset - start))
}

/// `t`'s ne, then its nb divided by `unit` (the element size, or 1 for strides in bytes):
/// the WGSL `Layout` struct.
pub fn layout_of(t: &Tensor, unit: usize) -> [u32; 2 * MAX_DIMS] {
    let (ne, nb) = (t.ne(), t.nb());
    let mut layout = [0u32; 2 * MAX_DIMS];
    for i in 0..MAX_DIMS {
        layout[i] = ne[i] as u32;
        layout[MAX_DIMS + i] = (nb[i] / unit) as u32;
    }
    layout
}

/// Bind `t` at `@binding(binding)` (see [`bind_range`]) for a shader indexing it in
/// elements.
pub fn arg(ctx: &GpuContext, t: &Tensor, binding: u32) -> Result<Arg> {
    let (binding, at) = bind_range(ctx, t, binding)?;
    let es = t.ty().type_size();
    let offset = t.storage().map_or(0, |s| s.offset);
    if !indexable(t) || !offset.is_multiple_of(es) {
        return Err(Error::unsupported(format!(
            "WebGPU: tensor '{}' (offset {offset}, strides {:?}) is not addressable in whole {es}-byte elements",
            t.label(),
            t.nb()
        )));
    }
    Ok(Arg { binding, elem_offset: (at / es) as u32, layout: layout_of(t, es), nelements: t.nelements() as u32 })
}

/// The node's first N sources bound at @binding(1..=N) and the node itself
/// right after them: the binding order of every shader here without optional inputs.
pub fn bind_node<const N: usize>(ctx: &GpuContext, node: &Tensor) -> Result<([Arg; N], Arg)> {
    let srcs: Vec<Arg> = (0..N).map(|i| arg(ctx, src(node, i)?, i as u32 + 1)).collect::<Result<_>>()?;
    let srcs = srcs.try_into().map_err(|_| Error::invalid("WebGPU: source count"))?;
    Ok((srcs, arg(ctx, node, N as u32 + 1)?))
}

/// Builder of a params block: layouts and scalars in the WGSL struct's field order.
#[derive(Default)]
pub struct Params(Vec<u32>);

impl Params {
    /// The head every shader's Params starts with: the Layouts of dst and of its sources
    /// (zeros for an absent optional one), then `offs`: the element offsets of dst and of
    /// up to two sources, and `count` (elements or rows) in w.
    pub fn header(dst: &Arg, srcs: &[Option<&Arg>], count: u32) -> Params {
        debug_assert!(srcs.len() <= 2, "offs holds two source offsets");
        let mut p = Params::default().layout(dst);
        let mut offs = [dst.elem_offset, 0, 0, count];
        for (i, s) in srcs.iter().enumerate() {
            p.0.extend_from_slice(&s.map_or([0; 2 * MAX_DIMS], |s| s.layout));
            offs[1 + i] = s.map_or(0, |s| s.elem_offset);
        }
        p.u32s(&offs)
    }
    fn layout(mut self, a: &Arg) -> Params {
        self.0.extend_from_slice(&a.layout);
        self
    }
    pub fn u32s(mut self, v: &[u32]) -> Params {
        self.0.extend_from_slice(v);
        self
    }
    pub fn f32s(mut self, v: &[f32]) -> Params {
        self.0.extend(v.iter().map(|x| x.to_bits()));
        self
    }
    /// Padded to 16 bytes: WGSL rounds a struct holding vec4s up to that.
    pub fn finish(mut self) -> Vec<u32> {
        self.0.resize(self.0.len().next_multiple_of(4), 0);
        self.0
    }
}

/// A grid of `n` workgroups in up to three dimensions, each at most the device's
/// max_compute_workgroups_per_dimension; shaders flatten it back (common.wgsl's
/// group_index) and skip the overhang.
pub fn grid(ctx: &GpuContext, n: u64) -> Result<[u32; 3]> {
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    grid_dims(n, max)
        .ok_or_else(|| Error::unsupported(format!("{}: {n} workgroups exceed the device's {max}^3 grid", ctx.name)))
}

fn grid_dims(n: u64, max: u32) -> Option<[u32; 3]> {
    let max = max.max(1) as u64;
    let x = n.clamp(1, max);
    let y = n.div_ceil(x).clamp(1, max);
    let z = n.div_ceil(x * y).max(1);
    (z <= max).then_some([x as u32, y as u32, z as u32])
}

/// The grid for one invocation per element of `n`, `wg` per workgroup.
pub fn grid_for_elements(ctx: &GpuContext, n: u32, wg: u32) -> Result<[u32; 3]> {
    grid(ctx, (n as u64).div_ceil(wg as u64))
}

#[cfg(test)]
mod tests {
    use super::grid_dims;

    #[test]
    fn grids_cover_every_workgroup_within_the_limit() {
        assert_eq!(grid_dims(0, 65535), Some([1, 1, 1]));
        assert_eq!(grid_dims(100, 65535), Some([100, 1, 1]));
        assert_eq!(grid_dims(65536, 65535), Some([65535, 2, 1]));
        assert_eq!(grid_dims(10, 3), Some([3, 3, 2]));
        assert_eq!(grid_dims(28, 3), None);
        for n in [1u64, 7, 27, 1000, 65535 * 65535 + 1] {
            let [x, y, z] = grid_dims(n, 65535).unwrap();
            let total = x as u64 * y as u64 * z as u64;
            // Enough groups, and less than one row of the outermost dimension left over.
            assert!(total >= n && total - n < x as u64 * y as u64, "{n}: {x}x{y}x{z}");
        }
    }
}
