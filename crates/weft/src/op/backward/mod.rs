//! Reverse-mode autodiff, as ggml does it at the reference commit: a rewrite of a forward
//! graph `gf` into the nodes of a backward graph `gb` (ggml_build_backward_expand).
//!
//! Gradients are ordinary tensors hanging off the forward nodes (`Tensor::grad`):
//! 1. every node of gf that is a parameter or depends on one gets a placeholder gradient, a
//!    fresh tensor of its own type and shape (ggml_dup_tensor);
//! 2. walking gf backwards, each node's rule (rules.rs and the files next to it) adds its
//!    gradient's contribution to its sources' gradients through `Grads` (table.rs), which
//!    replaces an untouched placeholder instead of adding zeros to it;
//! 3. gb is expanded with every parameter's final gradient.
//!
//! `Graph::reset` (reset.rs) then writes 1 into the loss's placeholder and 0 into every other
//! gradient, so computing gf then gb leaves d(loss)/d(param) in each `param.grad()`.

mod activation;
mod layout;
mod nn;
mod reset;
mod rules;
mod table;

use crate::context::Context;
use crate::graph::Graph;
use crate::op::{Op, UnaryOp};
use crate::tensor::{flags, Tensor};
use crate::types::Type;
use crate::{ensure, Error, Result};

pub use reset::AdamwParams;
use table::Grads;

impl Tensor {
    /// ggml_set_param: mark a trainable parameter. build_backward_expand gives it a gradient.
    pub fn set_param(&self) {
        self.set_flags(flags::PARAM);
    }

    /// ggml_set_loss: mark the scalar f32 whose gradient graph_reset sets to 1.
    pub fn set_loss(&self) -> Result<()> {
        ensure!(
            self.is_scalar() && self.ty() == Type::F32,
            "setLoss: tensor '{}' must be a scalar f32, is {} {}",
            self.label(),
            self.ty(),
            crate::tensor::fmt_shape(&self.ne())
        );
        self.set_flags(flags::LOSS);
        Ok(())
    }
}

impl Context {
    /// ggml_build_backward_expand: give every node of `gf` that depends on a parameter a
    /// gradient, build the nodes that compute them and expand `gb` (usually a copy of gf,
    /// so that graph_reset finds the loss) with each parameter's gradient.
    ///
    /// With `accumulate`, parameter gradients are added in place into their placeholders,
    /// so computing gb again adds to them until the next graph_reset (ggml's acc_table).
    ///
    /// On error the forward nodes get their previous gradients back and gb is unchanged;
    /// tensors already created stay in the context, as ggml has no way to free them either.
    pub fn build_backward_expand(&self, gf: &Graph, gb: &mut Graph, accumulate: bool) -> Result<()> {
        let what = "buildBackwardExpand";
        ensure!(gf.n_nodes() > 0, "{what}: the forward graph has no nodes");
        ensure!(gf.has_grads(), "{what}: the forward graph was made without grads (newGraphCustom(size, true))");
        if !gf.nodes().iter().any(|n| n.has_flag(flags::PARAM)) {
            // A tensor marked after it went into gf stays one of gf's leafs.
            let late = gf
                .leafs()
                .iter()
                .find(|l| l.has_flag(flags::PARAM))
                .map(|l| format!(" ('{}' became a parameter after buildForwardExpand made it a leaf)", l.label()));
            return Err(Error::invalid(format!(
                "{what}: the forward graph has no parameter (setParam) to take gradients for{}",
                late.unwrap_or_default()
            )));
        }
        let before: Vec<Option<Tensor>> = gf.nodes().iter().map(|n| n.grad()).collect();
        let result = self.backward_nodes(gf, accumulate);
        if let Err(e) = result {
            for (n, g) in gf.nodes().iter().zip(before) {
                n.set_grad(g);
            }
            return Err(e);
        }
        // Expand a copy, so that a graph that fills up mid-way leaves gb as it was.
        let mut out = gb.clone();
        for n in gf.nodes().iter().filter(|n| n.has_flag(flags::PARAM)) {
            if let Some(g) = n.grad() {
                out.build_forward_expand(&g)?;
            }
        }
        *gb = out;
        Ok(())
    }

    /// Steps 1 and 2: placeholders, then the rules from the last node to the first.
    fn backward_nodes(&self, gf: &Graph, accumulate: bool) -> Result<()> {
        let mut grads = Grads::new(self);
        for node in gf.nodes() {
            if !needs_grad(node)? {
                continue;
            }
            check_not_inplace(gf, node)?;
            let placeholder = self.dup_tensor(node)?;
            grads.start(node, placeholder, accumulate && node.has_flag(flags::PARAM));
        }
        for node in gf.nodes().iter().rev() {
            if let Some(dy) = node.grad() {
                rules::backward(&mut grads, node, &dy)?;
                check_shapes(node)?;
            }
        }
        Ok(())
    }
}

/// Integer results (indices, counts) carry no gradient.
fn is_integer(ty: Type) -> bool {
    matches!(ty, Type::I8 | Type::I16 | Type::I32 | Type::I64)
}

/// Sources whose gradient cannot reach the node's value (ggml's ignore_src): index and
/// position inputs, tensors used for their shape only, and piecewise-constant ops.
pub(super) fn ignores_src(op: Op, i: usize) -> bool {
    matches!(
        (op, i),
        (Op::Im2col { .. } | Op::Im2colBack { .. } | Op::Unary { op: UnaryOp::Sgn | UnaryOp::Step }, 0)
            | (Op::Cpy | Op::GetRows | Op::GetRowsBack | Op::Rope { .. } | Op::RopeBack { .. }, 1)
    )
}

/// A node needs a gradient when it is a parameter or a source it depends on through a
/// differentiable path has one (sources come first in gf, so theirs are already decided).
fn needs_grad(node: &Tensor) -> Result<bool> {
    if is_integer(node.ty()) {
        return Ok(false);
    }
    if node.has_flag(flags::PARAM) {
        return Ok(true);
    }
    let op = node.op();
    for (i, s) in node.srcs().iter().enumerate() {
        let Some(s) = s else { continue };
        if s.grad().is_none() || ignores_src(op, i) {
            continue;
        }
        ensure!(
            matches!(s.ty(), Type::F32 | Type::F16),
            "buildBackwardExpand: {} node '{}' has src[{i}] '{}' of type {}: gradients flow through f32 and f16 only",
            op.desc(),
            node.label(),
            s.label(),
            s.ty()
        );
        return Ok(true);
    }
    Ok(false)
}

/// ggml refuses in-place ops on the gradient path: they overwrite values the backward
/// rules read. CLAMP is always in place (ggml_clamp returns a view), so it is allowed where
/// nothing is lost: see `clamp_overwrites_nothing`.
fn check_not_inplace(gf: &Graph, node: &Tensor) -> Result<()> {
    let op = node.op();
    let allowed = !node.is_view()
        || matches!(op, Op::Cpy | Op::View { .. } | Op::Reshape | Op::Permute { .. } | Op::Transpose)
        || (matches!(op, Op::Clamp { .. }) && clamp_overwrites_nothing(gf, node));
    ensure!(
        allowed,
        "buildBackwardExpand: {} node '{}' works in place on '{}'; in-place ops cannot be differentiated \
         (their input is overwritten), use the out-of-place variant",
        op.desc(),
        node.label(),
        node.view_src().map(|s| s.label()).unwrap_or_default()
    );
    Ok(())
}

/// A CLAMP overwrites its source x. Its own rule reads only its output, so the overwrite is
/// harmless when x is a computed tensor owning its memory (not a parameter or input), the
/// clamp is x's only reader in gf, and x's rule does not read x's own value.
fn clamp_overwrites_nothing(gf: &Graph, node: &Tensor) -> bool {
    let Some(x) = node.src(0) else { return false };
    let readers = gf.nodes().iter().filter(|n| n.srcs().iter().flatten().any(|s| s.ptr_eq(x))).count();
    x.op() != Op::None && !x.is_view() && readers == 1 && !rules::reads_own_output(x.op())
}

/// ggml's closing assertion: every source gradient has its source's shape.
fn check_shapes(node: &Tensor) -> Result<()> {
    for s in node.srcs().iter().flatten() {
        if let Some(g) = s.grad() {
            if !g.same_shape(s) {
                return Err(Error::invalid(format!(
                    "buildBackwardExpand: the {} rule gave '{}' {} a gradient of shape {}",
                    node.op().desc(),
                    s.label(),
                    crate::tensor::fmt_shape(&s.ne()),
                    crate::tensor::fmt_shape(&g.ne())
                )));
            }
        }
    }
    Ok(())
}
