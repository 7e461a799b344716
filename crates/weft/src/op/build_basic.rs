//! Constructors of the elementwise ops: arithmetic with broadcasting, the unary family,
//! scale, clamp and friends. Shape rules and checks follow ggml.c; messages name the op
//! in JS spelling and the broken condition.

use crate::context::Context;
use crate::op::{Op, UnaryOp};
use crate::tensor::{contiguous_strides, fmt_shape, Tensor, TensorSpec, MAX_DIMS};
use crate::types::Type;
use crate::{ensure, Result};

/// `a` if inplace, else "a tensor like a": the two result shapes of most ggml ops.
pub(crate) enum Out<'a> {
    Like(&'a Tensor),
    InplaceOf(&'a Tensor),
    New(Type, [i64; MAX_DIMS]),
}

/// ggml's kernels read rows as packed arrays (`nb[0] == ggml_type_size(type)`) and assert
/// it; constructors check it up front so no backend meets a strided row.
pub(crate) fn ensure_packed(what: &str, name: &str, t: &Tensor) -> Result<()> {
    ensure!(
        t.nb()[0] == t.ty().type_size(),
        "{what}: {name} must have packed elements ({name}.nb[0]={} must be {}, the size of {})",
        t.nb()[0],
        t.ty().type_size(),
        t.ty()
    );
    Ok(())
}

/// The same for tensors a kernel walks as one flat array (ggml_is_contiguous).
pub(crate) fn ensure_contiguous(what: &str, name: &str, t: &Tensor) -> Result<()> {
    ensure!(t.is_contiguous(), "{what}: {name} must be contiguous");
    Ok(())
}

impl Context {
    /// Create an op's result node: a new contiguous tensor, or a view of `a` for in-place ops
    /// (ggml_view_tensor / ggml_dup_tensor / ggml_new_tensor).
    pub(crate) fn op_node(&self, what: &str, out: Out<'_>, op: Op, src: Vec<Option<Tensor>>) -> Result<Tensor> {
        match out {
            Out::InplaceOf(a) => self.view_of(a, op, src, a.ne(), a.nb(), 0, format!("{} (view)", a.name()), what),
            Out::Like(a) => self.op_node(what, Out::New(a.ty(), a.ne()), op, src),
            Out::New(ty, ne) => self.create(
                what,
                TensorSpec {
                    ty,
                    nb: contiguous_strides(ty, &ne),
                    ne,
                    op,
                    src,
                    view_src: None,
                    view_offs: 0,
                    name: String::new(),
                },
            ),
        }
    }

    fn binary_bcast(&self, what: &str, op: Op, a: &Tensor, b: &Tensor, inplace: bool) -> Result<Tensor> {
        ensure!(
            b.can_repeat_to(a),
            "{what}: b {} must repeat to a {} (each a.ne[i] a multiple of b.ne[i])",
            fmt_shape(&b.ne()),
            fmt_shape(&a.ne())
        );
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, op, vec![Some(a.clone()), Some(b.clone())])
    }

    fn unary_like(&self, what: &str, op: Op, a: &Tensor, inplace: bool) -> Result<Tensor> {
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, op, vec![Some(a.clone())])
    }

    /// ggml_add_cast: a + b computed into a tensor of `ty` (for quantized / f16 a).
    pub fn add_cast(&self, a: &Tensor, b: &Tensor, ty: Type) -> Result<Tensor> {
        ensure!(
            b.can_repeat_rows_to(a),
            "addCast: b {} must repeat rows to a {} (same ne[0], whole repeats)",
            fmt_shape(&b.ne()),
            fmt_shape(&a.ne())
        );
        ensure!(
            a.ty().is_quantized() || a.ty() == Type::F16 || a.ty() == Type::BF16,
            "addCast: a.type={} must be quantized, f16 or bf16",
            a.ty()
        );
        self.op_node("addCast", Out::New(ty, a.ne()), Op::Add, vec![Some(a.clone()), Some(b.clone())])
    }

    fn add1_impl(&self, a: &Tensor, b: &Tensor, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "add1Inplace" } else { "add1" };
        ensure!(b.is_scalar(), "{what}: b must be a scalar, got {}", fmt_shape(&b.ne()));
        ensure!(
            a.is_padded_1d(),
            "{what}: a must have packed rows (nb[0]=type size, nb[2]=nb[1]*ne[1], nb[3]=nb[2]*ne[2])"
        );
        self.binary_bcast(what, Op::Add1, a, b, inplace)
    }
    pub fn add1(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.add1_impl(a, b, false)
    }
    pub fn add1_inplace(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        self.add1_impl(a, b, true)
    }

    /// ggml_unary / ggml_unary_inplace.
    pub fn unary(&self, a: &Tensor, op: UnaryOp, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "unaryInplace" } else { "unary" };
        ensure!(a.is_contiguous_1(), "{what}({}): a must be contiguous in its rows (ggml_is_contiguous_1)", op.name());
        self.unary_like(what, Op::Unary { op }, a, inplace)
    }

    /// ggml_leaky_relu.
    pub fn leaky_relu(&self, a: &Tensor, negative_slope: f32, inplace: bool) -> Result<Tensor> {
        self.unary_like("leakyRelu", Op::LeakyRelu { negative_slope }, a, inplace)
    }

    fn scale_impl(&self, a: &Tensor, s: f32, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "scaleInplace" } else { "scale" };
        ensure!(
            a.is_padded_1d(),
            "{what}: a must have packed rows (nb[0]=type size, nb[2]=nb[1]*ne[1], nb[3]=nb[2]*ne[2])"
        );
        self.unary_like(what, Op::Scale { s }, a, inplace)
    }
    pub fn scale(&self, a: &Tensor, s: f32) -> Result<Tensor> {
        self.scale_impl(a, s, false)
    }
    pub fn scale_inplace(&self, a: &Tensor, s: f32) -> Result<Tensor> {
        self.scale_impl(a, s, true)
    }

    /// ggml_clamp: always in place (ggml returns a view of a).
    pub fn clamp(&self, a: &Tensor, min: f32, max: f32) -> Result<Tensor> {
        self.unary_like("clamp", Op::Clamp { min, max }, a, true)
    }

    /// ggml_silu_back: a = x, b = dy.
    pub fn silu_back(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        ensure!(
            a.same_shape(b),
            "siluBack: a {} and b {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&b.ne())
        );
        self.op_node("siluBack", Out::Like(a), Op::SiluBack, vec![Some(a.clone()), Some(b.clone())])
    }
}

/// `fn add(a, b)` and `fn add_inplace(a, b)` for each broadcasting binary op.
macro_rules! binary_ops {
    ($( $f:ident, $fi:ident, $js:literal, $op:ident; )*) => {
        impl Context {
            $(
                #[doc = concat!("ggml_", stringify!($f), ": elementwise, b broadcast over a.")]
                pub fn $f(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
                    self.binary_bcast($js, Op::$op, a, b, false)
                }
                pub fn $fi(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
                    self.binary_bcast(concat!($js, "Inplace"), Op::$op, a, b, true)
                }
            )*
        }
    };
}

binary_ops! {
    add, add_inplace, "add", Add;
    sub, sub_inplace, "sub", Sub;
    mul, mul_inplace, "mul", Mul;
    div, div_inplace, "div", Div;
}

/// Elementwise ops without params that keep a's shape.
macro_rules! simple_unary_ops {
    ($( $f:ident, $fi:ident, $js:literal, $op:ident; )*) => {
        impl Context {
            $(
                #[doc = concat!("ggml_", stringify!($f), ".")]
                pub fn $f(&self, a: &Tensor) -> Result<Tensor> {
                    self.unary_like($js, Op::$op, a, false)
                }
                pub fn $fi(&self, a: &Tensor) -> Result<Tensor> {
                    self.unary_like(concat!($js, "Inplace"), Op::$op, a, true)
                }
            )*
        }
    };
}

simple_unary_ops! {
    dup, dup_inplace, "dup", Dup;
    sqr, sqr_inplace, "sqr", Sqr;
    sqrt, sqrt_inplace, "sqrt", Sqrt;
    log, log_inplace, "log", Log;
    sin, sin_inplace, "sin", Sin;
    cos, cos_inplace, "cos", Cos;
}

/// The ggml_<unary> shorthands (ggml_relu(ctx, a) == ggml_unary(ctx, a, GGML_UNARY_OP_RELU)).
macro_rules! unary_shorthands {
    ($( $f:ident, $fi:ident, $op:ident; )*) => {
        impl Context {
            $(
                #[doc = concat!("ggml_", stringify!($f), ".")]
                pub fn $f(&self, a: &Tensor) -> Result<Tensor> {
                    self.unary(a, UnaryOp::$op, false)
                }
                pub fn $fi(&self, a: &Tensor) -> Result<Tensor> {
                    self.unary(a, UnaryOp::$op, true)
                }
            )*
        }
    };
}

unary_shorthands! {
    abs, abs_inplace, Abs;
    sgn, sgn_inplace, Sgn;
    neg, neg_inplace, Neg;
    step, step_inplace, Step;
    tanh, tanh_inplace, Tanh;
    elu, elu_inplace, Elu;
    relu, relu_inplace, Relu;
    sigmoid, sigmoid_inplace, Sigmoid;
    gelu, gelu_inplace, Gelu;
    gelu_quick, gelu_quick_inplace, GeluQuick;
    silu, silu_inplace, Silu;
    hardswish, hardswish_inplace, Hardswish;
    hardsigmoid, hardsigmoid_inplace, Hardsigmoid;
    exp, exp_inplace, Exp;
}

#[cfg(test)]
mod tests {
    use crate::context::{Context, ContextParams};
    use crate::op::OpKind;
    use crate::types::Type;

    fn ctx() -> Context {
        Context::new(ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap()
    }

    #[test]
    fn broadcast_rules() {
        let c = ctx();
        let a = c.new_tensor_4d(Type::F32, 10, 5, 4, 3).unwrap();
        let b = c.new_tensor_4d(Type::F32, 10, 1, 2, 3).unwrap();
        let r = c.add(&a, &b).unwrap();
        assert_eq!(r.ne(), a.ne());
        assert_eq!(r.kind(), OpKind::Add);
        let bad = c.new_tensor_2d(Type::F32, 3, 5).unwrap();
        let e = c.mul(&a, &bad).unwrap_err();
        assert!(e.message.starts_with("mul: b [3,5,1,1] must repeat to a [10,5,4,3]"), "{}", e.message);
        let v = c.add_inplace(&a, &b).unwrap();
        assert!(v.view_src().unwrap().ptr_eq(&a));
        let s = c.new_tensor_1d(Type::F32, 2).unwrap();
        assert!(c.add1(&a, &s).unwrap_err().message.contains("b must be a scalar"));
    }
}
