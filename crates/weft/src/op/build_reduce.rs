//! Constructors of reductions, normalizations, softmax, masks, repeat and sorting.

use super::build_basic::Out;
use crate::context::Context;
use crate::op::{Op, SortOrder};
use crate::tensor::{fmt_shape, Tensor};
use crate::types::Type;
use crate::{ensure, Result};

impl Context {
    /// ggml_sum: the sum of all elements, as a 1-element tensor of a's type.
    pub fn sum(&self, a: &Tensor) -> Result<Tensor> {
        self.op_node("sum", Out::New(a.ty(), [1, 1, 1, 1]), Op::Sum, vec![Some(a.clone())])
    }

    /// ggml_sum_rows: [a,b,c,d] -> [1,b,c,d].
    pub fn sum_rows(&self, a: &Tensor) -> Result<Tensor> {
        let ne = a.ne();
        self.op_node("sumRows", Out::New(a.ty(), [1, ne[1], ne[2], ne[3]]), Op::SumRows, vec![Some(a.clone())])
    }

    /// ggml_mean: row means, f32.
    pub fn mean(&self, a: &Tensor) -> Result<Tensor> {
        let ne = a.ne();
        self.op_node("mean", Out::New(Type::F32, [1, ne[1], ne[2], ne[3]]), Op::Mean, vec![Some(a.clone())])
    }

    /// ggml_argmax: index of the largest element of each row of a matrix, i32.
    pub fn argmax(&self, a: &Tensor) -> Result<Tensor> {
        ensure!(a.is_matrix(), "argmax: a must be a matrix, got {}", fmt_shape(&a.ne()));
        self.op_node("argmax", Out::New(Type::I32, [a.ne()[1], 1, 1, 1]), Op::Argmax, vec![Some(a.clone())])
    }

    /// ggml_count_equal: number of equal elements, i64 scalar.
    pub fn count_equal(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(
            a.same_shape(b),
            "countEqual: a {} and b {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&b.ne())
        );
        self.op_node(
            "countEqual",
            Out::New(Type::I64, [1, 1, 1, 1]),
            Op::CountEqual,
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_repeat: tile a to b's shape.
    pub fn repeat(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(a.can_repeat_to(b), "repeat: a {} must repeat to b {}", fmt_shape(&a.ne()), fmt_shape(&b.ne()));
        self.op_node("repeat", Out::New(a.ty(), b.ne()), Op::Repeat, vec![Some(a.clone())])
    }

    /// ggml_repeat_back: sum the repetitions of a into b's shape.
    pub fn repeat_back(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(b.can_repeat_to(a), "repeatBack: b {} must repeat to a {}", fmt_shape(&b.ne()), fmt_shape(&a.ne()));
        self.op_node("repeatBack", Out::New(a.ty(), b.ne()), Op::RepeatBack, vec![Some(a.clone())])
    }

    /// ggml_argsort: per-row sort permutation, i32.
    pub fn argsort(&self, a: &Tensor, order: SortOrder) -> Result<Tensor> {
        self.op_node("argsort", Out::New(Type::I32, a.ne()), Op::Argsort { order }, vec![Some(a.clone())])
    }

    /// ggml_top_k: indices of the k largest per row (a view of a descending argsort).
    pub fn top_k(&self, a: &Tensor, k: i64) -> Result<Tensor> {
        ensure!(a.ne()[0] >= k, "topK: a.ne[0]={} must be at least k={}", a.ne()[0], k);
        let sorted = self.argsort(a, SortOrder::Desc)?;
        let (ne, nb) = (sorted.ne(), sorted.nb());
        self.view_4d(&sorted, k, ne[1], ne[2], ne[3], nb[1], nb[2], nb[3], 0)
    }

    fn norm_like(&self, what: &str, op: Op, a: &Tensor, inplace: bool) -> Result<Tensor> {
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, op, vec![Some(a.clone())])
    }

    /// ggml_norm: (x - mean) / sqrt(var + eps) along rows.
    pub fn norm(&self, a: &Tensor, eps: f32, inplace: bool) -> Result<Tensor> {
        self.norm_like(if inplace { "normInplace" } else { "norm" }, Op::Norm { eps }, a, inplace)
    }

    /// ggml_rms_norm: x / sqrt(mean(x^2) + eps) along rows.
    pub fn rms_norm(&self, a: &Tensor, eps: f32, inplace: bool) -> Result<Tensor> {
        self.norm_like(if inplace { "rmsNormInplace" } else { "rmsNorm" }, Op::RmsNorm { eps }, a, inplace)
    }

    /// ggml_rms_norm_back: a = x, b = dy.
    pub fn rms_norm_back(&self, a: &Tensor, b: &Tensor, eps: f32) -> Result<Tensor> {
        ensure!(
            a.same_shape(b),
            "rmsNormBack: a {} and b {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&b.ne())
        );
        self.op_node("rmsNormBack", Out::Like(a), Op::RmsNormBack { eps }, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_group_norm: normalize groups of ne0*ne1*(ne2/n_groups) elements.
    pub fn group_norm(&self, a: &Tensor, n_groups: i32, eps: f32, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "groupNormInplace" } else { "groupNorm" };
        ensure!(n_groups > 0, "{what}: nGroups={n_groups} must be positive");
        self.norm_like(what, Op::GroupNorm { n_groups, eps }, a, inplace)
    }

    /// ggml_soft_max_ext: softmax(a*scale + mask*slope) along rows, with ALiBi slopes when
    /// max_bias > 0.
    pub fn soft_max_ext(&self, a: &Tensor, mask: Option<&Tensor>, scale: f32, max_bias: f32) -> Result<Tensor> {
        self.soft_max_impl("softMaxExt", a, mask, scale, max_bias, false)
    }
    pub fn soft_max(&self, a: &Tensor) -> Result<Tensor> {
        self.soft_max_impl("softMax", a, None, 1.0, 0.0, false)
    }
    pub fn soft_max_inplace(&self, a: &Tensor) -> Result<Tensor> {
        self.soft_max_impl("softMaxInplace", a, None, 1.0, 0.0, true)
    }

    fn soft_max_impl(
        &self,
        what: &str,
        a: &Tensor,
        mask: Option<&Tensor>,
        scale: f32,
        max_bias: f32,
        inplace: bool,
    ) -> Result<Tensor> {
        ensure!(a.is_contiguous(), "{what}: a must be contiguous");
        if let Some(m) = mask {
            ensure!(m.ty() == Type::F16 || m.ty() == Type::F32, "{what}: mask.type={} must be f16 or f32", m.ty());
            ensure!(m.is_contiguous(), "{what}: mask must be contiguous");
            ensure!(m.is_matrix(), "{what}: mask must be a matrix, got {}", fmt_shape(&m.ne()));
            ensure!(m.ne()[0] == a.ne()[0], "{what}: mask.ne[0]={} must equal a.ne[0]={}", m.ne()[0], a.ne()[0]);
            ensure!(m.ne()[1] >= a.ne()[1], "{what}: mask.ne[1]={} must be at least a.ne[1]={}", m.ne()[1], a.ne()[1]);
        }
        ensure!(max_bias <= 0.0 || mask.is_some(), "{what}: maxBias={max_bias} > 0 needs a mask");
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, Op::SoftMax { scale, max_bias }, vec![Some(a.clone()), mask.cloned()])
    }

    /// ggml_soft_max_back: a = dy, b = y.
    pub fn soft_max_back(&self, a: &Tensor, b: &Tensor, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "softMaxBackInplace" } else { "softMaxBack" };
        ensure!(
            a.same_shape(b),
            "{what}: a {} and b {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&b.ne())
        );
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, Op::SoftMaxBack, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_diag_mask_inf: set elements above the diagonal (shifted by n_past) to -inf.
    pub fn diag_mask_inf(&self, a: &Tensor, n_past: i32, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "diagMaskInfInplace" } else { "diagMaskInf" };
        self.norm_like(what, Op::DiagMaskInf { n_past }, a, inplace)
    }

    /// ggml_diag_mask_zero: same, with zeros.
    pub fn diag_mask_zero(&self, a: &Tensor, n_past: i32, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "diagMaskZeroInplace" } else { "diagMaskZero" };
        self.norm_like(what, Op::DiagMaskZero { n_past }, a, inplace)
    }

    /// ggml_cross_entropy_loss: a = logits, b = labels; scalar loss of a's type.
    pub fn cross_entropy_loss(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(
            a.same_shape(b),
            "crossEntropyLoss: logits a {} and labels b {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&b.ne())
        );
        self.op_node(
            "crossEntropyLoss",
            Out::New(a.ty(), [1, 1, 1, 1]),
            Op::CrossEntropyLoss,
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_cross_entropy_loss_back: c = gradient of the loss (scalar).
    pub fn cross_entropy_loss_back(&self, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        let what = "crossEntropyLossBack";
        ensure!(
            a.same_shape(b),
            "{what}: a {} and b {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&b.ne())
        );
        ensure!(c.is_scalar(), "{what}: c must be a scalar, got {}", fmt_shape(&c.ne()));
        self.op_node(
            what,
            Out::Like(a),
            Op::CrossEntropyLossBack,
            vec![Some(a.clone()), Some(b.clone()), Some(c.clone())],
        )
    }
}
