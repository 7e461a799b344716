//! The context: ggml's `ggml_context`, a memory budget that tensors and graphs are created
//! against. weft accounts object and tensor sizes exactly as ggml does (so a budget that
//! works in ggml works here), but running out is an Error instead of an abort. With
//! `no_alloc == false` tensor data lives in the context's own host buffer, at the offset
//! ggml would give it.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::backend::cpu::CpuBufferType;
use crate::backend::Buffer;
use crate::op::Op;
use crate::tensor::{contiguous_strides, span_bytes, Tensor, TensorSpec, MAX_DIMS};
use crate::types::Type;
use crate::{Error, Result};

/// ggml's `GGML_MEM_ALIGN` on 64-bit hosts.
pub const MEM_ALIGN: usize = 16;
/// sizeof(struct ggml_object) in ggml.
pub const OBJECT_SIZE: usize = 32;
/// sizeof(struct ggml_tensor) in ggml at the reference version.
pub const TENSOR_SIZE: usize = 336;

/// ggml_tensor_overhead().
pub const fn tensor_overhead() -> usize {
    OBJECT_SIZE + TENSOR_SIZE
}

pub const fn pad(x: usize, n: usize) -> usize {
    (x + n - 1) & !(n - 1)
}

#[derive(Clone, Copy, Debug)]
pub struct ContextParams {
    pub mem_size: usize,
    pub no_alloc: bool,
}

struct Inner {
    mem_size: usize,
    no_alloc: bool,
    /// End of the last object (ggml_used_mem).
    used: usize,
    tensors: Vec<Tensor>,
    /// Host memory for tensor data, created on the first tensor that needs it.
    pool: Option<Arc<dyn Buffer>>,
}

pub struct Context {
    inner: Mutex<Inner>,
}

impl Context {
    pub fn new(params: ContextParams) -> Result<Context> {
        // ggml allows a zero size and pads the rest to the alignment.
        let mem_size = if params.mem_size == 0 { MEM_ALIGN } else { params.mem_size };
        let mem_size = mem_size
            .checked_add(MEM_ALIGN - 1)
            .map(|s| s & !(MEM_ALIGN - 1))
            .ok_or_else(|| Error::invalid(format!("Context: memSize={} is too large", params.mem_size)))?;
        Ok(Context {
            inner: Mutex::new(Inner { mem_size, no_alloc: params.no_alloc, used: 0, tensors: Vec::new(), pool: None }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn mem_size(&self) -> usize {
        self.lock().mem_size
    }
    pub fn used_mem(&self) -> usize {
        self.lock().used
    }
    pub fn no_alloc(&self) -> bool {
        self.lock().no_alloc
    }
    pub fn set_no_alloc(&self, no_alloc: bool) {
        self.lock().no_alloc = no_alloc;
    }
    /// Tensors in creation order (ggml_get_first_tensor / ggml_get_next_tensor).
    pub fn tensors(&self) -> Vec<Tensor> {
        self.lock().tensors.clone()
    }
    /// ggml_get_tensor: the first tensor with this name.
    pub fn get_tensor(&self, name: &str) -> Option<Tensor> {
        self.lock().tensors.iter().find(|t| t.name() == name).cloned()
    }
    /// ggml_get_max_tensor_size.
    pub fn max_tensor_size(&self) -> usize {
        self.lock().tensors.iter().map(|t| t.nbytes()).max().unwrap_or(0)
    }
    /// ggml_reset: forget every object. Tensors already handed out stay valid (they are
    /// reference counted) but are no longer listed by this context.
    pub fn reset(&self) {
        let mut g = self.lock();
        g.used = 0;
        g.tensors.clear();
        g.pool = None;
    }

    /// ggml_new_object: reserve `size` bytes (plus the object header) at the end of the pool.
    /// Returns the offset of the object's payload.
    fn new_object(inner: &mut Inner, what: &str, size: usize) -> Result<usize> {
        let needed = pad(size, MEM_ALIGN);
        let end = inner.used.checked_add(needed).and_then(|e| e.checked_add(OBJECT_SIZE));
        match end {
            Some(end) if end <= inner.mem_size => {
                let offs = inner.used + OBJECT_SIZE;
                inner.used = end;
                Ok(offs)
            }
            _ => Err(Error::oom(format!(
                "{what}: not enough space in the context's memory pool (needed {}, available {})",
                inner.used.saturating_add(needed).saturating_add(OBJECT_SIZE),
                inner.mem_size
            ))),
        }
    }

    /// Account for a graph object (ggml_new_graph_custom).
    pub(crate) fn alloc_graph_object(&self, bytes: usize) -> Result<()> {
        let mut g = self.lock();
        Self::new_object(&mut g, "newGraph", bytes).map(|_| ())
    }

    /// ggml_new_tensor_impl: validate, account and create. `spec.nb` must be set; views
    /// are flattened onto their base tensor and checked to stay inside it.
    pub(crate) fn create(&self, what: &str, mut spec: TensorSpec) -> Result<Tensor> {
        let ty = spec.ty;
        for (i, &n) in spec.ne.iter().enumerate() {
            if n < 0 {
                return Err(Error::invalid(format!("{what}: ne[{i}]={n} must not be negative")));
            }
        }
        if spec.ne[0] % ty.blck_size() as i64 != 0 {
            return Err(Error::invalid(format!(
                "{what}: ne[0]={} must be a multiple of {}'s block size {}",
                spec.ne[0],
                ty,
                ty.blck_size()
            )));
        }
        // Contiguous size of the data (what ggml allocates and checks views against).
        let data_size = spec.ne[1..]
            .iter()
            .try_fold(ty.row_size_checked(spec.ne[0]).unwrap_or(usize::MAX), |acc, &n| acc.checked_mul(n as usize))
            .filter(|&s| s <= isize::MAX as usize)
            .ok_or_else(|| Error::invalid(format!("{what}: shape {:?} is too large", spec.ne)))?;
        let span = span_bytes(ty, &spec.ne, &spec.nb)
            .filter(|&s| s <= isize::MAX as usize)
            .ok_or_else(|| Error::invalid(format!("{what}: strides {:?} overflow", spec.nb)))?;

        if let Some(src) = spec.view_src.take() {
            let (base, offs) = match src.view_src() {
                Some(b) => (b.clone(), src.view_offs() + spec.view_offs),
                None => (src, spec.view_offs),
            };
            let base_bytes = base.nbytes();
            // ggml's own rule, then the real extent of the strided view: both must fit.
            if data_size != 0 && data_size.checked_add(offs).is_none_or(|e| e > base_bytes) {
                return Err(Error::invalid(format!(
                    "{what}: view of {} bytes at offset {} does not fit in '{}' ({} bytes)",
                    data_size,
                    offs,
                    base.label(),
                    base_bytes
                )));
            }
            if span != 0 && span.checked_add(offs).is_none_or(|e| e > base_bytes) {
                return Err(Error::invalid(format!(
                    "{what}: strided view spans {} bytes at offset {}, past the end of '{}' ({} bytes)",
                    span,
                    offs,
                    base.label(),
                    base_bytes
                )));
            }
            spec.view_src = Some(base);
            spec.view_offs = offs;
        }

        let mut g = self.lock();
        let owns_data = spec.view_src.is_none() && !g.no_alloc;
        let alloc = if owns_data { data_size } else { 0 };
        let offs = Self::new_object(&mut g, what, crate::context::TENSOR_SIZE + alloc)?;
        let tensor = Tensor::from_spec(spec);
        if owns_data {
            let pool = match &g.pool {
                Some(p) => p.clone(),
                None => {
                    let p = CpuBufferType::get().alloc_buffer(g.mem_size)?;
                    g.pool = Some(p.clone());
                    p
                }
            };
            tensor.bind(pool, offs + TENSOR_SIZE)?;
        }
        g.tensors.push(tensor.clone());
        Ok(tensor)
    }

    // ---- plain tensors and views of whole tensors ----

    /// ggml_new_tensor: 1 to 4 dims.
    pub fn new_tensor(&self, ty: Type, ne: &[i64]) -> Result<Tensor> {
        if ne.is_empty() || ne.len() > MAX_DIMS {
            return Err(Error::invalid(format!("newTensor: {} dims given, 1 to 4 allowed", ne.len())));
        }
        let mut full = [1i64; MAX_DIMS];
        full[..ne.len()].copy_from_slice(ne);
        self.new_tensor_named(ty, full, "", "newTensor")
    }

    pub(crate) fn new_tensor_named(&self, ty: Type, ne: [i64; MAX_DIMS], name: &str, what: &str) -> Result<Tensor> {
        self.create(
            what,
            TensorSpec {
                ty,
                nb: contiguous_strides(ty, &ne),
                ne,
                op: Op::None,
                src: Vec::new(),
                view_src: None,
                view_offs: 0,
                name: name.to_string(),
            },
        )
    }

    pub fn new_tensor_1d(&self, ty: Type, ne0: i64) -> Result<Tensor> {
        self.new_tensor(ty, &[ne0])
    }
    pub fn new_tensor_2d(&self, ty: Type, ne0: i64, ne1: i64) -> Result<Tensor> {
        self.new_tensor(ty, &[ne0, ne1])
    }
    pub fn new_tensor_3d(&self, ty: Type, ne0: i64, ne1: i64, ne2: i64) -> Result<Tensor> {
        self.new_tensor(ty, &[ne0, ne1, ne2])
    }
    pub fn new_tensor_4d(&self, ty: Type, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> Result<Tensor> {
        self.new_tensor(ty, &[ne0, ne1, ne2, ne3])
    }

    /// ggml_dup_tensor: a new tensor of the same type and shape (contiguous, no data copied).
    pub fn dup_tensor(&self, a: &Tensor) -> Result<Tensor> {
        self.new_tensor_named(a.ty(), a.ne(), "", "dupTensor")
    }

    /// ggml_view_tensor: a view of all of `a` with its strides.
    pub fn view_tensor(&self, a: &Tensor) -> Result<Tensor> {
        self.view_of(a, Op::None, vec![], a.ne(), a.nb(), 0, format!("{} (view)", a.name()), "viewTensor")
    }

    /// A view node of `a`: shared by the view ops and the in-place op variants.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn view_of(
        &self,
        a: &Tensor,
        op: Op,
        src: Vec<Option<Tensor>>,
        ne: [i64; MAX_DIMS],
        nb: [usize; MAX_DIMS],
        offset: usize,
        name: String,
        what: &str,
    ) -> Result<Tensor> {
        self.create(
            what,
            TensorSpec { ty: a.ty(), ne, nb, op, src, view_src: Some(a.clone()), view_offs: offset, name },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_ggml_accounting() {
        // 2 tensors of 4 f32 with data: each object is 32 + pad(336 + 16, 16) = 384 bytes.
        let ctx = Context::new(ContextParams { mem_size: 768, no_alloc: false }).unwrap();
        ctx.new_tensor_1d(Type::F32, 4).unwrap();
        assert_eq!(ctx.used_mem(), 384);
        ctx.new_tensor_1d(Type::F32, 4).unwrap();
        assert_eq!(ctx.used_mem(), 768);
        let err = ctx.new_tensor_1d(Type::F32, 1).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::OutOfMemory);
        assert!(err.message.contains("not enough space"), "{}", err.message);

        // no_alloc: only the 368-byte overhead per tensor counts, whatever the shape.
        let ctx = Context::new(ContextParams { mem_size: tensor_overhead() * 2, no_alloc: true }).unwrap();
        ctx.new_tensor_2d(Type::F32, 1 << 20, 1 << 10).unwrap();
        ctx.new_tensor_2d(Type::F32, 1 << 20, 1 << 10).unwrap();
        assert!(ctx.new_tensor_1d(Type::F32, 1).is_err());
    }

    #[test]
    fn shapes_and_strides() {
        let ctx = Context::new(ContextParams { mem_size: 1 << 16, no_alloc: true }).unwrap();
        let t = ctx.new_tensor_3d(Type::Q4_0, 64, 3, 2).unwrap();
        // q4_0: 32 elements in 18 bytes, so a 64-element row is 36 bytes.
        assert_eq!(t.nb(), [18, 36, 108, 216]);
        assert_eq!(t.nbytes(), 216);
        assert_eq!(t.nrows(), 6);
        assert_eq!(t.n_dims(), 3);
        assert!(t.is_contiguous());
        let e = ctx.new_tensor_1d(Type::Q4_0, 33).unwrap_err();
        assert!(e.message.contains("block size 32"), "{}", e.message);
        let e = ctx.new_tensor_2d(Type::F32, -1, 2).unwrap_err();
        assert!(e.message.contains("ne[0]=-1"), "{}", e.message);
        assert!(ctx.new_tensor_4d(Type::F32, i64::MAX, 2, 1, 1).is_err());
    }
}
