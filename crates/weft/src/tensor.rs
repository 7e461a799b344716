//! The tensor: ggml's `struct ggml_tensor` as a reference-counted node.
//!
//! Shape (`ne`), byte strides (`nb`), type, sources and view origin never change after
//! construction; what ggml mutates later (name, flags, op params, the gradient link and the
//! memory a backend binds the tensor to) sits behind a mutex. Cloning a `Tensor` clones the
//! handle, not the data; identity is the node (`ptr_eq`, `id`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::backend::Buffer;
use crate::op::{Op, OpKind};
use crate::types::Type;
use crate::{Error, Result};

pub const MAX_DIMS: usize = 4;
/// ggml's `GGML_MAX_SRC`.
pub const MAX_SRC: usize = 10;
/// ggml's `GGML_MAX_NAME`: names are cut to 63 bytes.
pub const MAX_NAME: usize = 64;

/// Tensor flags, with ggml's bit values.
pub mod flags {
    pub const INPUT: u32 = 1;
    pub const OUTPUT: u32 = 2;
    pub const PARAM: u32 = 4;
    pub const LOSS: u32 = 8;
}

/// Where a tensor's bytes live: a backend buffer and a byte offset into it.
#[derive(Clone)]
pub struct Storage {
    pub buffer: Arc<dyn Buffer>,
    pub offset: usize,
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.buffer.name(), self.offset)
    }
}

struct State {
    op: Op,
    name: String,
    flags: u32,
    grad: Option<Tensor>,
    /// Set by an allocator for tensors that own memory; views derive theirs.
    storage: Option<Storage>,
}

pub(crate) struct Node {
    id: u64,
    /// The op's kind, fixed at creation (`set_op` changes params only): read without the
    /// state lock by every compute's per-node checks.
    kind: OpKind,
    ty: Type,
    ne: [i64; MAX_DIMS],
    nb: [usize; MAX_DIMS],
    src: Vec<Option<Tensor>>,
    view_src: Option<Tensor>,
    view_offs: usize,
    state: Mutex<State>,
}

#[derive(Clone)]
pub struct Tensor(Arc<Node>);

/// Everything needed to create a tensor node; the context checks and accounts for it.
pub(crate) struct TensorSpec {
    pub ty: Type,
    pub ne: [i64; MAX_DIMS],
    pub nb: [usize; MAX_DIMS],
    pub op: Op,
    pub src: Vec<Option<Tensor>>,
    pub view_src: Option<Tensor>,
    pub view_offs: usize,
    pub name: String,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Contiguous byte strides of a shape (ggml_new_tensor_impl's rule). Saturates on
/// absurd shapes; Context::create rejects those before any tensor exists.
pub fn contiguous_strides(ty: Type, ne: &[i64; MAX_DIMS]) -> [usize; MAX_DIMS] {
    let mut nb = [0usize; MAX_DIMS];
    nb[0] = ty.type_size();
    nb[1] = nb[0].saturating_mul(ne[0].max(0) as usize / ty.blck_size());
    for i in 2..MAX_DIMS {
        nb[i] = nb[i - 1].saturating_mul(ne[i - 1].max(0) as usize);
    }
    nb
}

/// ggml_nbytes for an arbitrary shape and strides: the span from the first to one past the
/// last byte addressed. Returns None on overflow. Empty tensors span 0 bytes.
pub fn span_bytes(ty: Type, ne: &[i64; MAX_DIMS], nb: &[usize; MAX_DIMS]) -> Option<usize> {
    if ne.iter().any(|&n| n <= 0) {
        return Some(0);
    }
    let blck = ty.blck_size();
    let mut bytes: usize = if blck == 1 { ty.type_size() } else { (ne[0] as usize).checked_mul(nb[0])? / blck };
    let first = if blck == 1 { 0 } else { 1 };
    for i in first..MAX_DIMS {
        bytes = bytes.checked_add((ne[i] as usize - 1).checked_mul(nb[i])?)?;
    }
    Some(bytes)
}

pub(crate) fn truncate_name(name: &str) -> String {
    if name.len() < MAX_NAME {
        return name.to_string();
    }
    let mut end = MAX_NAME - 1;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

impl Tensor {
    pub(crate) fn from_spec(spec: TensorSpec) -> Tensor {
        let mut src = spec.src;
        while matches!(src.last(), Some(None)) {
            src.pop();
        }
        Tensor(Arc::new(Node {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            kind: spec.op.kind(),
            ty: spec.ty,
            ne: spec.ne,
            nb: spec.nb,
            src,
            view_src: spec.view_src,
            view_offs: spec.view_offs,
            state: Mutex::new(State {
                op: spec.op,
                name: truncate_name(&spec.name),
                flags: 0,
                grad: None,
                storage: None,
            }),
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a panic elsewhere while holding it; the state itself
        // is plain data and still consistent, so keep going.
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Unique id of this node (creation order), usable as a map key.
    pub fn id(&self) -> u64 {
        self.0.id
    }
    pub fn ptr_eq(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    pub fn ty(&self) -> Type {
        self.0.ty
    }
    pub fn ne(&self) -> [i64; MAX_DIMS] {
        self.0.ne
    }
    pub fn nb(&self) -> [usize; MAX_DIMS] {
        self.0.nb
    }
    pub fn op(&self) -> Op {
        self.state().op
    }
    /// `op().kind()` without taking the state lock.
    pub fn kind(&self) -> OpKind {
        self.0.kind
    }
    /// Replace the op params (ggml_mul_mat_set_prec, the AdamW iteration counter). The op
    /// kind must stay the same.
    pub fn set_op(&self, op: Op) -> Result<()> {
        let mut s = self.state();
        if s.op.kind() != op.kind() {
            return Err(Error::invalid(format!("setOp: tensor '{}' is {}, not {}", s.name, s.op.name(), op.name())));
        }
        s.op = op;
        Ok(())
    }
    /// Source `i`, if present (ggml's `src[i]`).
    pub fn src(&self, i: usize) -> Option<&Tensor> {
        self.0.src.get(i).and_then(|s| s.as_ref())
    }
    /// All source slots up to the last present one.
    pub fn srcs(&self) -> &[Option<Tensor>] {
        &self.0.src
    }
    pub fn view_src(&self) -> Option<&Tensor> {
        self.0.view_src.as_ref()
    }
    pub fn view_offs(&self) -> usize {
        self.0.view_offs
    }
    pub fn is_view(&self) -> bool {
        self.0.view_src.is_some()
    }
    pub fn name(&self) -> String {
        self.state().name.clone()
    }
    pub fn set_name(&self, name: &str) {
        self.state().name = truncate_name(name);
    }
    pub fn flags(&self) -> u32 {
        self.state().flags
    }
    pub fn set_flags(&self, f: u32) {
        self.state().flags |= f;
    }
    pub fn clear_flags(&self, f: u32) {
        self.state().flags &= !f;
    }
    pub fn has_flag(&self, f: u32) -> bool {
        self.state().flags & f != 0
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.state().grad.clone()
    }
    pub fn set_grad(&self, grad: Option<Tensor>) {
        self.state().grad = grad;
    }

    /// The memory this tensor lives in: its own for allocated tensors, the base tensor's
    /// plus `view_offs` for views (ggml_backend_view_init), None while unallocated.
    pub fn storage(&self) -> Option<Storage> {
        self.with_storage(|buffer, offset| Storage { buffer: buffer.clone(), offset })
    }

    /// `f` on [`Tensor::storage`]'s buffer and offset without cloning the buffer's handle:
    /// kernels ask for every node's tensors on every compute, and the clone and drop are two
    /// atomic read-modify-writes each time. `f` runs under this tensor's state lock, so it
    /// must not touch the tensor itself.
    pub fn with_storage<R>(&self, f: impl FnOnce(&Arc<dyn Buffer>, usize) -> R) -> Option<R> {
        // A view's memory is its base's (a view of a view adds both offsets).
        let (mut t, mut offs) = (self, 0);
        while let Some(base) = &t.0.view_src {
            offs += t.0.view_offs;
            t = base;
        }
        t.state().storage.as_ref().map(|s| f(&s.buffer, s.offset + offs))
    }
    pub fn is_allocated(&self) -> bool {
        self.with_storage(|_, _| ()).is_some()
    }

    /// Bind this tensor to `buffer` at `offset` (ggml_backend_tensor_alloc). Checks that the
    /// whole span fits the buffer, so kernels can trust it.
    pub fn bind(&self, buffer: Arc<dyn Buffer>, offset: usize) -> Result<()> {
        if self.is_view() {
            return Err(Error::invalid(format!(
                "tensor '{}' is a view: it takes its memory from its base tensor",
                self.name()
            )));
        }
        let end = offset.checked_add(buffer.buffer_type().alloc_size(self));
        if end.is_none_or(|e| e > buffer.size()) {
            return Err(Error::invalid(format!(
                "tensor '{}' ({} bytes at offset {}) does not fit buffer '{}' of {} bytes",
                self.name(),
                self.nbytes(),
                offset,
                buffer.name(),
                buffer.size()
            )));
        }
        let mut s = self.state();
        if s.storage.is_some() {
            return Err(Error::invalid(format!("tensor '{}' is already allocated", s.name)));
        }
        s.storage = Some(Storage { buffer, offset });
        Ok(())
    }

    /// Forget the binding (used when a graph allocator re-plans a graph).
    pub fn unbind(&self) {
        self.state().storage = None;
    }

    // ---- shape helpers, as ggml names them ----

    pub fn nelements(&self) -> i64 {
        self.0.ne.iter().product()
    }
    pub fn nrows(&self) -> i64 {
        self.0.ne[1] * self.0.ne[2] * self.0.ne[3]
    }
    /// ggml_nbytes: bytes spanned by the tensor's elements given its strides.
    pub fn nbytes(&self) -> usize {
        // Checked when the tensor was created, so this cannot overflow here.
        span_bytes(self.0.ty, &self.0.ne, &self.0.nb).unwrap_or(usize::MAX)
    }
    pub fn row_size(&self) -> usize {
        self.0.ty.row_size(self.0.ne[0] as usize)
    }
    pub fn element_size(&self) -> usize {
        self.0.ty.type_size()
    }
    pub fn n_dims(&self) -> usize {
        (1..MAX_DIMS).rev().find(|&i| self.0.ne[i] > 1).map_or(1, |i| i + 1)
    }
    pub fn is_empty(&self) -> bool {
        self.0.ne.contains(&0)
    }
    pub fn is_scalar(&self) -> bool {
        self.0.ne == [1, 1, 1, 1]
    }
    pub fn is_vector(&self) -> bool {
        self.0.ne[1] == 1 && self.0.ne[2] == 1 && self.0.ne[3] == 1
    }
    pub fn is_matrix(&self) -> bool {
        self.0.ne[2] == 1 && self.0.ne[3] == 1
    }
    pub fn is_3d(&self) -> bool {
        self.0.ne[3] == 1
    }
    pub fn is_transposed(&self) -> bool {
        self.0.nb[0] > self.0.nb[1]
    }
    pub fn is_permuted(&self) -> bool {
        let nb = self.0.nb;
        nb[0] > nb[1] || nb[1] > nb[2] || nb[2] > nb[3]
    }
    /// ggml_is_contiguous_n: dims above `n` are packed; dims up to `n` may have gaps.
    fn is_contiguous_n(&self, n: usize) -> bool {
        let (ty, ne, nb) = (self.0.ty, self.0.ne, self.0.nb);
        let mut next_nb = ty.type_size();
        if ne[0] != ty.blck_size() as i64 && nb[0] != next_nb {
            return false;
        }
        next_nb *= ne[0].max(0) as usize / ty.blck_size();
        for i in 1..MAX_DIMS {
            if ne[i] != 1 {
                if i > n {
                    if nb[i] != next_nb {
                        return false;
                    }
                    next_nb *= ne[i].max(0) as usize;
                } else {
                    next_nb = ne[i].max(0) as usize * nb[i];
                }
            }
        }
        true
    }
    pub fn is_contiguous(&self) -> bool {
        self.is_contiguous_n(0)
    }
    pub fn is_contiguous_1(&self) -> bool {
        self.is_contiguous_n(1)
    }
    pub fn is_contiguous_2(&self) -> bool {
        self.is_contiguous_n(2)
    }
    /// ggml_is_contiguously_allocated-style check used by kernels: rows packed, no gaps.
    pub fn is_padded_1d(&self) -> bool {
        let (ne, nb) = (self.0.ne, self.0.nb);
        nb[0] == self.0.ty.type_size() && nb[2] == nb[1] * ne[1] as usize && nb[3] == nb[2] * ne[2] as usize
    }
    pub fn same_shape(&self, other: &Tensor) -> bool {
        self.0.ne == other.0.ne
    }
    pub fn same_stride(&self, other: &Tensor) -> bool {
        self.0.nb == other.0.nb
    }
    /// ggml_can_repeat(self, to): `to` is a whole number of copies of `self` in every dim.
    pub fn can_repeat_to(&self, to: &Tensor) -> bool {
        if self.is_empty() {
            return to.is_empty();
        }
        (0..MAX_DIMS).all(|i| to.0.ne[i] % self.0.ne[i] == 0)
    }
    /// ggml_can_repeat_rows: same row length and repeatable.
    pub fn can_repeat_rows_to(&self, to: &Tensor) -> bool {
        self.0.ne[0] == to.0.ne[0] && self.can_repeat_to(to)
    }

    /// `name` if set, else a short description for error messages.
    pub fn label(&self) -> String {
        let n = self.name();
        if n.is_empty() {
            format!("<{} {}>", self.0.ty, fmt_shape(&self.0.ne))
        } else {
            n
        }
    }
}

pub fn fmt_shape(ne: &[i64; MAX_DIMS]) -> String {
    format!("[{},{},{},{}]", ne[0], ne[1], ne[2], ne[3])
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor({} {} {} {})", self.name(), self.0.ty, fmt_shape(&self.0.ne), self.op().name())
    }
}

/// A tensor as a key in hash maps and sets, by identity (ggml hashes pointers).
#[derive(Clone, Debug)]
pub struct ById(pub Tensor);

impl PartialEq for ById {
    fn eq(&self, other: &Self) -> bool {
        self.0.ptr_eq(&other.0)
    }
}
impl Eq for ById {}
impl std::hash::Hash for ById {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.id().hash(state)
    }
}
