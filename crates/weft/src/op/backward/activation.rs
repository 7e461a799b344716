//! Rules of the activations: the UNARY family, LEAKY_RELU and CLAMP. ggml's (ABS, SGN, NEG,
//! STEP, RELU, SILU, EXP) are written as ggml writes them; the others are built from
//! forward ops: each is dx = dy * f'(x) with f' expressed through f's own output where that
//! is simplest (tanh: 1 - y^2, sigmoid: y (1 - y)).

use super::table::{constant, contiguous_1, Grads};
use crate::context::Context;
use crate::op::UnaryOp;
use crate::tensor::Tensor;
use crate::Result;

/// GELU's tanh approximation: y = x/2 (1 + tanh(u)), u = SQRT_2_OVER_PI (x + GELU_COEF_A x^3),
/// with the forward kernel's constants.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;
const GELU_COEF_A: f32 = 0.044715;
/// GELU_QUICK: y = x sigmoid(GELU_QUICK_COEF x).
const GELU_QUICK_COEF: f32 = 1.702;

pub(super) fn unary(g: &mut Grads, node: &Tensor, dy: &Tensor, op: UnaryOp) -> Result<()> {
    let Some(x) = super::table::wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let y = node;
    match op {
        // Piecewise constant: no gradient (and build_backward_expand ignores the source).
        UnaryOp::Sgn | UnaryOp::Step => Ok(()),
        UnaryOp::Neg => g.sub(&x, dy.clone()),
        UnaryOp::Abs => g.add(&x, c.mul(&c.sgn(&contiguous_1(c, &x)?)?, dy)?),
        UnaryOp::Relu => g.add(&x, c.mul(&c.step(&contiguous_1(c, &x)?)?, dy)?),
        UnaryOp::Silu => g.add(&x, c.silu_back(&x, dy)?),
        UnaryOp::Exp => g.add(&x, c.mul(y, dy)?),
        // dy (1 - y^2) = dy - dy y^2
        UnaryOp::Tanh => g.add(&x, c.sub(dy, &c.mul(dy, &c.sqr(y)?)?)?),
        // dy y (1 - y) = t - t y with t = dy y
        UnaryOp::Sigmoid => {
            let t = c.mul(dy, y)?;
            g.add(&x, c.sub(&t, &c.mul(&t, y)?)?)
        }
        // 1 for x > 0, e^x = y + 1 below: both are e^min(x, 0), and min(x, 0) = x - relu(x).
        UnaryOp::Elu => {
            let xc = contiguous_1(c, &x)?;
            let below = c.sub(&xc, &c.relu(&xc)?)?;
            g.add(&x, c.mul(dy, &c.exp(&below)?)?)
        }
        UnaryOp::Gelu => g.add(&x, c.mul(dy, &gelu_derivative(c, &contiguous_1(c, &x)?)?)?),
        // s + k x s (1 - s) with s = sigmoid(k x)
        UnaryOp::GeluQuick => {
            let xc = contiguous_1(c, &x)?;
            let s = c.sigmoid(&c.scale(&xc, GELU_QUICK_COEF)?)?;
            let slope = c.scale(&c.mul(&xc, &sigmoid_slope(c, &s)?)?, GELU_QUICK_COEF)?;
            g.add(&x, c.mul(dy, &c.add(&s, &slope)?)?)
        }
        // 1/6 where 0 < y < 1, where y (1 - y) > 0.
        UnaryOp::Hardsigmoid => {
            let inside = c.step(&sigmoid_slope(c, y)?)?;
            g.add(&x, c.scale(&c.mul(dy, &inside)?, 1.0 / 6.0)?)
        }
        // y = x h(x), h = hardsigmoid: h + x h' = h + x/6 where 0 < h < 1.
        UnaryOp::Hardswish => {
            let xc = contiguous_1(c, &x)?;
            let h = c.hardsigmoid(&xc)?;
            let inside = c.step(&sigmoid_slope(c, &h)?)?;
            let slope = c.scale(&c.mul(&xc, &inside)?, 1.0 / 6.0)?;
            g.add(&x, c.mul(dy, &c.add(&h, &slope)?)?)
        }
    }
}

/// s (1 - s) = s - s^2: the derivative of a sigmoid in terms of its value.
fn sigmoid_slope(c: &Context, s: &Tensor) -> Result<Tensor> {
    c.sub(s, &c.sqr(s)?)
}

/// d/dx of GELU's tanh form. With s = sigmoid(2u): (1 + tanh u)/2 = s and
/// 1 - tanh^2 u = 4 s (1 - s), so y' = s + s (1 - s) (2k x + 6 k a x^3), where
/// 2u = 2k x + 2k a x^3 (k = SQRT_2_OVER_PI, a = GELU_COEF_A).
fn gelu_derivative(c: &Context, x: &Tensor) -> Result<Tensor> {
    let k = SQRT_2_OVER_PI;
    let x3 = c.mul(&c.sqr(x)?, x)?;
    let linear = c.scale(x, 2.0 * k)?;
    let s = c.sigmoid(&c.add(&linear, &c.scale(&x3, 2.0 * k * GELU_COEF_A)?)?)?;
    let du = c.add(&linear, &c.scale(&x3, 6.0 * k * GELU_COEF_A)?)?;
    c.add(&s, &c.mul(&sigmoid_slope(c, &s)?, &du)?)
}

/// LEAKY_RELU: slope below 0, 1 above: dy (slope + (1 - slope) step(x)).
pub(super) fn leaky_relu(g: &mut Grads, node: &Tensor, dy: &Tensor, slope: f32) -> Result<()> {
    let Some(x) = super::table::wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let above = c.mul(dy, &c.step(&contiguous_1(c, &x)?)?)?;
    let dyc = super::table::contiguous(c, dy)?;
    g.add(&x, c.add(&c.scale(&dyc, slope)?, &c.scale(&above, 1.0 - slope)?)?)
}

/// CLAMP: dy where min < y < max, i.e. where (y - min)(y - max) < 0. Read from y alone,
/// because ggml_clamp works in place and x is gone once it ran.
pub(super) fn clamp(g: &mut Grads, node: &Tensor, dy: &Tensor, min: f32, max: f32) -> Result<()> {
    let Some(x) = super::table::wants(node, 0) else { return Ok(()) };
    let c = g.ctx;
    let y = node;
    let below_max = c.sub(y, &constant(c, max, dy)?)?;
    let above_min = c.sub(y, &constant(c, min, dy)?)?;
    let inside = c.step(&c.neg(&c.mul(&above_min, &below_max)?)?)?;
    g.add(&x, c.mul(dy, &inside)?)
}
