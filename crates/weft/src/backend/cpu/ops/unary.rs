//! Elementwise f32 maps: the UNARY family, SQR, SQRT, LOG, SIN, COS, SCALE, CLAMP and
//! LEAKY_RELU. GELU and GELU_QUICK go through fp16 lookup tables, as ggml's CPU does
//! (GGML_GELU_FP16), so results match ggml's to the bit.

use std::sync::OnceLock;

use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::{Op, UnaryOp};
use crate::tensor::Tensor;
use crate::types::{f16_to_f32, f32_to_f16, Type};
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    node.ty() == Type::F32 && node.src(0).is_some_and(|s| s.ty() == Type::F32 && s.same_shape(node))
}

const GELU_COEF_A: f32 = 0.044715;
const GELU_QUICK_COEF: f32 = -1.702;
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * x * (1.0 + GELU_COEF_A * x * x)).tanh())
}

fn gelu_quick(x: f32) -> f32 {
    x * (1.0 / (1.0 + (GELU_QUICK_COEF * x).exp()))
}

/// f(h) rounded to f16, for every f16 bit pattern h.
fn fp16_table(f: fn(f32) -> f32) -> Box<[u16]> {
    (0..=u16::MAX).map(|h| f32_to_f16(f(f16_to_f32(h)))).collect()
}

fn gelu_table() -> &'static [u16] {
    static T: OnceLock<Box<[u16]>> = OnceLock::new();
    T.get_or_init(|| fp16_table(gelu))
}

fn gelu_quick_table() -> &'static [u16] {
    static T: OnceLock<Box<[u16]>> = OnceLock::new();
    T.get_or_init(|| fp16_table(gelu_quick))
}

#[inline]
fn via_table(table: &[u16], x: f32) -> f32 {
    f16_to_f32(table[f32_to_f16(x) as usize])
}

/// The scalar function of each op, as ggml-cpu's ggml_vec_*_f32 computes it.
fn scalar_fn(op: Op) -> Box<dyn Fn(f32) -> f32 + Sync + Send> {
    match op {
        Op::Sqr => Box::new(|x| x * x),
        Op::Sqrt => Box::new(f32::sqrt),
        Op::Log => Box::new(f32::ln),
        Op::Sin => Box::new(f32::sin),
        Op::Cos => Box::new(f32::cos),
        Op::Scale { s } => Box::new(move |x| x * s),
        // ggml: MAX(MIN(x, max), min) with C's comparison macros (a NaN becomes max).
        Op::Clamp { min, max } => Box::new(move |x| {
            let t = if x < max { x } else { max };
            if t > min {
                t
            } else {
                min
            }
        }),
        Op::LeakyRelu { negative_slope } => {
            Box::new(move |x| (if x > 0.0 { x } else { 0.0 }) + negative_slope * (if x < 0.0 { x } else { 0.0 }))
        }
        Op::Unary { op } => match op {
            UnaryOp::Abs => Box::new(f32::abs),
            UnaryOp::Sgn => Box::new(|x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }),
            UnaryOp::Neg => Box::new(|x| -x),
            UnaryOp::Step => Box::new(|x| if x > 0.0 { 1.0 } else { 0.0 }),
            UnaryOp::Tanh => Box::new(f32::tanh),
            UnaryOp::Elu => Box::new(|x| if x > 0.0 { x } else { x.exp_m1() }),
            UnaryOp::Relu => Box::new(|x| if x > 0.0 { x } else { 0.0 }),
            UnaryOp::Sigmoid => Box::new(|x| 1.0 / (1.0 + (-x).exp())),
            UnaryOp::Gelu => {
                let t = gelu_table();
                Box::new(move |x| {
                    if x <= -10.0 {
                        0.0
                    } else if x >= 10.0 {
                        x
                    } else {
                        via_table(t, x)
                    }
                })
            }
            UnaryOp::GeluQuick => {
                let t = gelu_quick_table();
                Box::new(move |x| via_table(t, x))
            }
            UnaryOp::Silu => Box::new(|x| x / (1.0 + (-x).exp())),
            UnaryOp::Hardswish => Box::new(|x| x * (1.0f32).min((0.0f32).max((x + 3.0) / 6.0))),
            UnaryOp::Hardsigmoid => Box::new(|x| (1.0f32).min((0.0f32).max((x + 3.0) / 6.0))),
            UnaryOp::Exp => Box::new(f32::exp),
        },
        // Only the ops routed here reach this function.
        _ => Box::new(|x| x),
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    let f = scalar_fn(node.op());
    let n0 = d.n(0);
    let (sb0, db0) = (s.nb[0], d.nb[0]);
    cx.par_ranges(d.nrows(), (8192 / n0.max(1)).max(1), |rows| {
        for ir in rows {
            let (i1, i2, i3) = d.row_coords(ir);
            // SAFETY: same shape for src and dst; elements read before written, so an
            // in-place node (dst == src memory) is fine.
            unsafe {
                let (ps, pd) = (s.row_ptr(i1, i2, i3), d.row_ptr(i1, i2, i3));
                for i in 0..n0 {
                    let x = (ps.add(i * sb0) as *const f32).read_unaligned();
                    (pd.add(i * db0) as *mut f32).write_unaligned(f(x));
                }
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_table_matches_formula_within_f16() {
        for &x in &[-3.0f32, -0.5, 0.0, 0.1, 1.0, 2.5] {
            let exact = gelu(x);
            let tab = via_table(gelu_table(), x);
            assert!((exact - tab).abs() <= exact.abs() * 2e-3 + 1e-3, "{x}: {exact} vs {tab}");
        }
        // Worked by hand: gelu(1) = 0.5 * (1 + tanh(0.79788456 * 1.044715)) = 0.841192
        assert!((gelu(1.0) - 0.841192).abs() < 1e-5);
    }
}
