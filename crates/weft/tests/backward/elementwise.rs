//! Finite-difference checks of the elementwise rules: arithmetic (with broadcasting), the
//! math functions, reductions and repeats, and every activation.

use crate::fd::{check, get, input, param, set, uniform, Built, Case};
use weft::op::UnaryOp;
use weft::{Context, Tensor};

const NE: [i64; 4] = [4, 3, 2, 2];
/// Broadcast over dims 1 and 3 of NE.
const NE_B: [i64; 4] = [4, 1, 2, 1];

fn two_params(c: &Context, nb: &[i64], op: fn(&Context, &Tensor, &Tensor) -> weft::Result<Tensor>) -> Built {
    let a = param(c, "a", &NE);
    let b = param(c, "b", nb);
    op(c, &a, &b).unwrap().into()
}

#[test]
fn add() {
    check(Case::new("ADD"), |c| two_params(c, &NE, Context::add));
    check(Case::new("ADD broadcast"), |c| two_params(c, &NE_B, Context::add));
}

#[test]
fn sub() {
    check(Case::new("SUB"), |c| two_params(c, &NE, Context::sub));
    check(Case::new("SUB broadcast"), |c| two_params(c, &NE_B, Context::sub));
}

#[test]
fn mul() {
    check(Case::new("MUL").max_err(1e-3), |c| two_params(c, &NE, Context::mul));
    check(Case::new("MUL broadcast").max_err(1e-3), |c| two_params(c, &NE_B, Context::mul));
    // The same tensor on both sides: two contributions to one gradient.
    check(Case::new("MUL x*x"), |c| {
        let a = param(c, "a", &NE);
        c.mul(&a, &a).unwrap().into()
    });
}

#[test]
fn div() {
    // ggml's settings: inputs near 1 (the quotient's derivative blows up at 0), 4-point rule.
    let case = |n| Case::new(n).range(0.9, 1.1).precise().max_err(1e-3);
    check(case("DIV"), |c| two_params(c, &NE, Context::div));
    check(case("DIV broadcast"), |c| two_params(c, &NE_B, Context::div));
}

#[test]
fn add1_and_scale() {
    check(Case::new("ADD1 (a and the scalar b)"), |c| {
        let a = param(c, "a", &NE);
        let b = param(c, "b", &[1]);
        c.add1(&a, &b).unwrap().into()
    });
    check(Case::new("SCALE"), |c| c.scale(&param(c, "a", &NE), 3.5).unwrap().into());
}

#[test]
fn math() {
    check(Case::new("SQR"), |c| c.sqr(&param(c, "a", &NE)).unwrap().into());
    // ggml's test_sqrt and test_log settings.
    check(Case::new("SQRT").range(50.0, 100.0).eps(20.0).precise(), |c| c.sqrt(&param(c, "a", &NE)).unwrap().into());
    check(Case::new("LOG").range(0.9, 1.1).precise(), |c| c.log(&param(c, "a", &NE)).unwrap().into());
    let trig = |n| Case::new(n).range(-3.0, 3.0).eps(0.2).precise().max_err(1e-3);
    check(trig("SIN"), |c| c.sin(&param(c, "a", &NE)).unwrap().into());
    check(trig("COS"), |c| c.cos(&param(c, "a", &NE)).unwrap().into());
}

#[test]
fn reductions_and_repeats() {
    check(Case::new("SUM"), |c| c.sum(&param(c, "a", &NE)).unwrap().into());
    check(Case::new("SUM inside the graph"), |c| {
        let a = param(c, "a", &NE);
        let b = param(c, "b", &NE_B);
        c.mul(&b, &c.repeat(&c.sum(&a).unwrap(), &b).unwrap()).unwrap().into()
    });
    check(Case::new("SUM_ROWS"), |c| c.sum_rows(&param(c, "a", &NE)).unwrap().into());
    check(Case::new("MEAN"), |c| c.mean(&param(c, "a", &NE)).unwrap().into());
    check(Case::new("REPEAT"), |c| c.repeat(&param(c, "a", &NE_B), &input(c, "shape", &NE)).unwrap().into());
    check(Case::new("REPEAT_BACK"), |c| c.repeat_back(&param(c, "a", &NE), &input(c, "shape", &NE_B)).unwrap().into());
}

/// Values of `n` uniform inputs moved at least `margin` away from each kink.
fn away_from(n: usize, seed: u64, lo: f32, hi: f32, kinks: &[f32], margin: f32) -> Vec<f32> {
    uniform(n, seed, lo, hi)
        .into_iter()
        .map(|mut x| {
            for &k in kinks {
                if (x - k).abs() < margin {
                    x = k + margin.copysign(x - k);
                }
            }
            x
        })
        .collect()
}

/// op(a) with a's values pinned away from the kinks.
fn unary_case(c: &Context, op: UnaryOp, kinks: &[f32], range: (f32, f32)) -> Built {
    let a = param(c, "a", &NE);
    let out = c.unary(&a, op, false).unwrap();
    let n = a.nelements() as usize;
    Built { out, fixed: vec![(a, away_from(n, 11, range.0, range.1, kinks, 0.05))] }
}

#[test]
fn unary_ggml() {
    // ggml's unary rules. Kinked ones keep their inputs 0.05 off the kink; eps 0.01 stays
    // on one side of it.
    for (op, kinks) in
        [(UnaryOp::Abs, &[0.0][..]), (UnaryOp::Sgn, &[0.0]), (UnaryOp::Step, &[0.0]), (UnaryOp::Relu, &[0.0])]
    {
        check(Case::new(op.name()).eps(1e-2), |c| unary_case(c, op, kinks, (-1.0, 1.0)));
    }
    check(Case::new("NEG"), |c| unary_case(c, UnaryOp::Neg, &[], (-1.0, 1.0)));
    check(Case::new("SILU").precise(), |c| unary_case(c, UnaryOp::Silu, &[], (-3.0, 3.0)));
    check(Case::new("EXP").precise(), |c| unary_case(c, UnaryOp::Exp, &[], (-2.0, 2.0)));
}

#[test]
fn unary_extra() {
    for op in [UnaryOp::Tanh, UnaryOp::Sigmoid] {
        check(Case::new(op.name()).precise(), |c| unary_case(c, op, &[], (-3.0, 3.0)));
    }
    // ELU's second derivative jumps at 0: keep off it.
    check(Case::new("ELU").precise(), |c| unary_case(c, UnaryOp::Elu, &[0.0], (-3.0, 3.0)));
    // The forward GELUs read an fp16 table (as ggml's CPU does): each value is rounded to
    // 11 bits, so differences of the engine's forward carry up to 3 * 2^-11 |y| / eps of
    // noise (4-point rule) and the bound here is that of the table. The rule itself is
    // held to 1e-5 against the exact formula in `gelu_against_the_formula_in_f64`.
    for op in [UnaryOp::Gelu, UnaryOp::GeluQuick] {
        check(Case::new(op.name()).eps(0.5).precise().max_err(1e-2), |c| unary_case(c, op, &[], (-3.0, 3.0)));
    }
    // Kinks where (x + 3) / 6 leaves [0, 1].
    for op in [UnaryOp::Hardsigmoid, UnaryOp::Hardswish] {
        check(Case::new(op.name()).eps(1e-2), |c| unary_case(c, op, &[-3.0, 3.0], (-5.0, 5.0)));
    }
}

#[test]
fn leaky_relu_and_clamp() {
    check(Case::new("LEAKY_RELU").eps(1e-2), |c| {
        let a = param(c, "a", &NE);
        let n = a.nelements() as usize;
        Built {
            out: c.leaky_relu(&a, 0.1, false).unwrap(),
            fixed: vec![(a.clone(), away_from(n, 5, -1.0, 1.0, &[0.0], 0.05))],
        }
    });
    // CLAMP works in place, so it clamps a computed tensor (2a), not the parameter itself.
    check(Case::new("CLAMP").eps(1e-2), |c| {
        let a = param(c, "a", &NE);
        let n = a.nelements() as usize;
        let out = c.clamp(&c.scale(&a, 2.0).unwrap(), -0.5, 0.5).unwrap();
        Built { out, fixed: vec![(a.clone(), away_from(n, 9, -0.6, 0.6, &[-0.25, 0.25], 0.02))] }
    });
}

fn gelu_exact(x: f64) -> f64 {
    0.5 * x * (1.0 + (0.797_884_560_802_865_4 * x * (1.0 + 0.044715 * x * x)).tanh())
}

fn gelu_quick_exact(x: f64) -> f64 {
    x / (1.0 + (-1.702 * x).exp())
}

/// The engine's gradient of sum(w * op(a)) against central differences (h = 1e-5) of the
/// exact formula, all in f64.
fn check_against_formula(op: UnaryOp, f: fn(f64) -> f64) {
    let ctx = crate::fd::meta_ctx();
    let a = param(&ctx, "a", &[64]);
    let out = ctx.unary(&a, op, false).unwrap();
    let crate::fd::Setup { gf, gb, cpu, buffers: _buffers, .. } = crate::fd::setup(&ctx, &out, false, (-1.0, 1.0));
    let x = uniform(64, 21, -4.0, 4.0);
    let w = crate::fd::loss_weights(64);
    set(&a, &x);
    set(&ctx.get_tensor(crate::fd::WEIGHTS).unwrap(), &w);
    gb.reset().unwrap();
    use weft::backend::Backend;
    cpu.graph_compute(&gf).unwrap();
    cpu.graph_compute(&gb).unwrap();
    let ga = get(&a.grad().unwrap());
    let h = 1e-5;
    let (mut maa, mut max_abs) = (0f64, 0f64);
    for i in 0..64 {
        let xi = x[i] as f64;
        let gn = w[i] as f64 * (f(xi + h) - f(xi - h)) / (2.0 * h);
        let d = (ga[i] as f64 - gn).abs();
        maa += if d == 0.0 { 0.0 } else { d / (ga[i] as f64 + gn).abs() } / 64.0;
        max_abs = max_abs.max(d);
    }
    println!("{:<40} MAA {maa:.2e}  max |err| {max_abs:.2e}  (64 values, exact formula)", op.name());
    assert!(maa < 1e-5, "{}: MAA {maa:.3e} against the formula", op.name());
}

#[test]
fn gelu_against_the_formula_in_f64() {
    check_against_formula(UnaryOp::Gelu, gelu_exact);
    check_against_formula(UnaryOp::GeluQuick, gelu_quick_exact);
}
