//! How contributions reach a source's gradient (ggml's add_or_set, sub_or_set, add1_or_set
//! and acc_or_set with their zero_table and acc_table), plus the small graph-building
//! helpers the rules share.
//!
//! ggml keys its tables by gradient tensor, so a placeholder that is handed on unchanged
//! (DUP passes its gradient through) can be mistaken for another node's untouched one.
//! weft keys them by the node that owns the gradient instead.

use std::collections::HashSet;

use crate::context::Context;
use crate::tensor::Tensor;
use crate::Result;

pub(super) struct Grads<'c> {
    pub ctx: &'c Context,
    /// Nodes whose gradient is still the placeholder made for them: the first contribution
    /// replaces it (ggml's zero_table).
    fresh: HashSet<u64>,
    /// Parameters whose gradient accumulates in place in its placeholder across computes
    /// (ggml's acc_table).
    accumulating: HashSet<u64>,
}

/// What a contribution does to the gradient it reaches.
enum Step {
    /// Replace an untouched placeholder.
    Set,
    /// Write into the placeholder's memory (accumulating parameters).
    InPlace,
    /// Make a new tensor from the current gradient and the contribution.
    New,
}

impl<'c> Grads<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        Grads { ctx, fresh: HashSet::new(), accumulating: HashSet::new() }
    }

    /// Give `node` its placeholder gradient.
    pub fn start(&mut self, node: &Tensor, placeholder: Tensor, accumulate: bool) {
        node.set_grad(Some(placeholder));
        self.fresh.insert(node.id());
        if accumulate {
            self.accumulating.insert(node.id());
        }
    }

    fn step(&mut self, src: &Tensor) -> Step {
        if self.accumulating.contains(&src.id()) {
            Step::InPlace
        } else if self.fresh.remove(&src.id()) {
            Step::Set
        } else {
            Step::New
        }
    }

    /// One contribution to src's gradient: `make` builds the new gradient from the step
    /// and the current one. Sources without a gradient take none.
    fn update(&mut self, src: &Tensor, make: impl FnOnce(&Context, Step, Tensor) -> Result<Tensor>) -> Result<()> {
        let Some(cur) = src.grad() else { return Ok(()) };
        let step = self.step(src);
        src.set_grad(Some(make(self.ctx, step, cur)?));
        Ok(())
    }

    /// src.grad += g (g has src's shape).
    pub fn add(&mut self, src: &Tensor, g: Tensor) -> Result<()> {
        self.update(src, |c, step, cur| match step {
            Step::Set => Ok(g),
            Step::InPlace => c.add_inplace(&cur, &g),
            Step::New => c.add(&cur, &g),
        })
    }

    /// src.grad -= g.
    pub fn sub(&mut self, src: &Tensor, g: Tensor) -> Result<()> {
        self.update(src, |c, step, cur| match step {
            Step::Set => c.neg(&contiguous_1(c, &g)?),
            Step::InPlace => c.sub_inplace(&cur, &g),
            Step::New => c.sub(&cur, &g),
        })
    }

    /// src.grad += g for a scalar g, broadcast to every element (SUM's rule).
    pub fn add_scalar(&mut self, src: &Tensor, g: Tensor) -> Result<()> {
        self.update(src, |c, step, cur| match step {
            Step::Set => c.repeat(&g, src),
            Step::InPlace => c.add1_inplace(&cur, &g),
            Step::New => c.add1(&contiguous(c, &cur)?, &g),
        })
    }

    /// The window of src.grad at `offset` with strides nb1..nb3 (bytes, src's layout) += g
    /// (VIEW's rule). An untouched placeholder becomes zeros first, made without reading
    /// its memory (ggml scales the placeholder by 0, which keeps NaNs left in it).
    pub fn add_window(&mut self, src: &Tensor, g: Tensor, nb: [usize; 3], offset: usize) -> Result<()> {
        let [nb1, nb2, nb3] = nb;
        self.update(src, |c, step, cur| {
            let (base, inplace) = match step {
                Step::Set => (zeros(c, src.ne(), &g)?, false),
                Step::InPlace => (cur, true),
                Step::New => (contiguous(c, &cur)?, false),
            };
            c.acc(&base, &g, nb1, nb2, nb3, offset, inplace)
        })
    }
}

/// Source `i` of `node` if it takes a gradient (rules build contributions only for these).
pub(super) fn wants(node: &Tensor, i: usize) -> Option<Tensor> {
    node.src(i).filter(|s| s.grad().is_some() && !super::ignores_src(node.op(), i)).cloned()
}

/// Source `i` of `node`, which its constructor guarantees (an error, not a panic, if not).
pub(super) fn src(node: &Tensor, i: usize) -> Result<Tensor> {
    node.src(i).cloned().ok_or_else(|| {
        crate::Error::invalid(format!(
            "buildBackwardExpand: {} node '{}' has no src[{i}]",
            node.op().desc(),
            node.label()
        ))
    })
}

/// `t`, or a contiguous copy when it is not (for ops that walk their input flat).
pub(super) fn contiguous(c: &Context, t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        c.cont(t)
    }
}

/// `t`, or a contiguous copy when its rows are not packed above dim 1 (the unary ops' rule).
pub(super) fn contiguous_1(c: &Context, t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous_1() {
        Ok(t.clone())
    } else {
        c.cont(t)
    }
}

/// `t`, or a contiguous copy unless its elements are packed and it is not transposed
/// (what mul_mat's first operand and out_prod's first operand need).
pub(super) fn packed(c: &Context, t: &Tensor) -> Result<Tensor> {
    if t.nb()[0] == t.ty().type_size() && !t.is_transposed() {
        Ok(t.clone())
    } else {
        c.cont(t)
    }
}

/// Sum a broadcast gradient back to the shape of the operand that was broadcast.
pub(super) fn unbroadcast(c: &Context, g: Tensor, to: &Tensor) -> Result<Tensor> {
    if g.same_shape(to) {
        Ok(g)
    } else {
        c.repeat_back(&g, to)
    }
}

/// Sum a gradient over the dims 2 and 3 that MUL_MAT and OUT_PROD broadcast their first
/// operand over. They broadcast in blocks (result slice i used operand slice i / r), not
/// tiled as REPEAT is (i % n), so each dim is split into (r, n) and the r copies summed.
/// (ggml's rule uses repeat_back, which sums the wrong slices when the operand has more
/// than one slice in a broadcast dim.)
pub(super) fn unbroadcast_blocks(c: &Context, g: Tensor, to: &Tensor) -> Result<Tensor> {
    let (gn, tn) = (g.ne(), to.ne());
    if gn == tn {
        return Ok(g);
    }
    let plane = gn[0] * gn[1];
    let (r2, r3) = (gn[2] / tn[2], gn[3] / tn[3]);
    let mut g = contiguous(c, &g)?;
    if r3 > 1 {
        g = sum_dim1(c, &c.reshape_4d(&g, plane * gn[2], r3, tn[3], 1)?)?;
    }
    if r2 > 1 {
        g = sum_dim1(c, &c.reshape_4d(&g, plane, r2, tn[2], tn[3])?)?;
    }
    c.reshape(&g, to)
}

/// Sum over dim 1 with REPEAT_BACK, whose target shape is given by a tensor: a view of
/// x's first element along dim 1 has that shape and costs no memory.
fn sum_dim1(c: &Context, x: &Tensor) -> Result<Tensor> {
    let (ne, nb) = (x.ne(), x.nb());
    let shape = c.view_4d(x, ne[0], 1, ne[2], ne[3], nb[1], nb[2], nb[3], 0)?;
    c.repeat_back(x, &shape)
}

/// Zeros of shape `ne` in `from`'s type, computed without reading memory: PAD writes
/// zeros wherever its source has no element, and the source here is an empty view.
pub(super) fn zeros(c: &Context, ne: [i64; 4], from: &Tensor) -> Result<Tensor> {
    let empty = c.view_1d(from, 0, 0)?;
    let p = |n: i64| i32::try_from(n).map_err(|_| crate::Error::invalid(format!("zeros: dimension {n} is too large")));
    c.pad(&empty, p(ne[0])?, p(ne[1] - 1)?, p(ne[2] - 1)?, p(ne[3] - 1)?)
}

/// A 1-element tensor holding `v` (any value, infinities included): ones from exp(0),
/// scaled. Rules use it where an op needs a constant operand.
pub(super) fn constant(c: &Context, v: f32, from: &Tensor) -> Result<Tensor> {
    let one = c.exp(&zeros(c, [1, 1, 1, 1], from)?)?;
    c.scale(&one, v)
}
