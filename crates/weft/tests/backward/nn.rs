//! Finite-difference checks of the model rules: matrix products (with broadcasting and
//! transposed operands), softmax, the norms, rope, im2col, pooling and cross-entropy.

use crate::common::rope_params;
use crate::fd::{check, input, param, uniform, Built, Case};
use weft::op::{Im2colParams, PoolOp, ROPE_TYPE_NEOX};
use weft::{Context, Type};

#[test]
fn mul_mat() {
    check(Case::new("MUL_MAT"), |c| c.mul_mat(&param(c, "a", &[8, 5]), &param(c, "b", &[8, 3])).unwrap().into());
    // a's slice i serves b's slices 2i and 2i+1 (dim 2) and all three of dim 3.
    check(Case::new("MUL_MAT broadcast a"), |c| {
        c.mul_mat(&param(c, "a", &[8, 5, 2, 1]), &param(c, "b", &[8, 3, 4, 3])).unwrap().into()
    });
    check(Case::new("MUL_MAT broadcast a in dim 3"), |c| {
        c.mul_mat(&param(c, "a", &[8, 5, 1, 2]), &param(c, "b", &[8, 3, 2, 4])).unwrap().into()
    });
    // b transposed (not packed): its rules copy it contiguous first.
    check(Case::new("MUL_MAT transposed b"), |c| {
        let bt = param(c, "b", &[3, 8]);
        c.mul_mat(&param(c, "a", &[8, 5]), &c.transpose(&bt).unwrap()).unwrap().into()
    });
}

#[test]
fn out_prod() {
    check(Case::new("OUT_PROD"), |c| c.out_prod(&param(c, "a", &[5, 8]), &param(c, "b", &[3, 8])).unwrap().into());
    check(Case::new("OUT_PROD broadcast a"), |c| {
        c.out_prod(&param(c, "a", &[5, 8, 2, 1]), &param(c, "b", &[3, 8, 4, 3])).unwrap().into()
    });
}

#[test]
fn soft_max() {
    check(Case::new("SOFT_MAX").precise(), |c| c.soft_max(&param(c, "a", &[10, 4, 2, 1])).unwrap().into());
    // scale != 1 (ggml's rule drops it) with a mask and ALiBi slopes on the mask.
    check(Case::new("SOFT_MAX_EXT scale, mask, max_bias").precise(), |c| {
        let a = param(c, "a", &[10, 4, 2, 1]);
        c.soft_max_ext(&a, Some(&input(c, "mask", &[10, 4])), 0.5, 2.0).unwrap().into()
    });
}

#[test]
fn norms() {
    check(Case::new("RMS_NORM").precise(), |c| c.rms_norm(&param(c, "a", &[10, 4, 2, 1]), 1e-6, false).unwrap().into());
    check(Case::new("NORM").precise(), |c| c.norm(&param(c, "a", &[10, 4, 2, 1]), 1e-5, false).unwrap().into());
    // 4 channels in 2 groups; 5 in 2 (groups of 3 and 2); 7 in 3 (3, 3, 1: the last group
    // of one channel still spans a whole plane).
    for (name, channels, groups) in [("GROUP_NORM 4/2", 4, 2), ("GROUP_NORM 5/2", 5, 2), ("GROUP_NORM 7/3", 7, 3)] {
        check(Case::new(name).precise(), |c| {
            c.group_norm(&param(c, "a", &[3, 2, channels, 2]), groups, 1e-5, false).unwrap().into()
        });
    }
}

#[test]
fn rope() {
    // ggml's test_rope settings: 4-point rule, bound 1e-3.
    for (name, mode, back) in [
        ("ROPE", 0, false),
        ("ROPE neox", ROPE_TYPE_NEOX, false),
        ("ROPE_BACK", 0, true),
        ("ROPE_BACK neox", ROPE_TYPE_NEOX, true),
    ] {
        check(Case::new(name).precise().max_err(1e-3), |c| {
            let a = param(c, "a", &[10, 5, 3, 1]);
            let pos = c.new_tensor_1d(Type::I32, 3).unwrap();
            let p = rope_params(8, mode);
            let out = if back { c.rope_back(&a, &pos, None, p) } else { c.rope_ext(&a, &pos, None, p, false) };
            Built { out: out.unwrap(), fixed: vec![(pos, vec![3.0, 17.0, 250.0])] }
        });
    }
}

#[test]
fn im2col_and_pool() {
    check(Case::new("IM2COL 2-D"), |c| {
        let kernel = input(c, "kernel", &[3, 3, 2, 1]);
        let image = param(c, "image", &[6, 5, 2, 1]);
        let p = Im2colParams { s0: 1, s1: 2, p0: 1, p1: 1, d0: 1, d1: 1, is_2d: true };
        c.im2col(&kernel, &image, p, Type::F32).unwrap().into()
    });
    check(Case::new("POOL_2D avg"), |c| {
        c.pool_2d(&param(c, "a", &[8, 6, 2, 1]), PoolOp::Avg, 2, 2, 2, 2, 1.0, 0.0).unwrap().into()
    });
    // Small steps, so no perturbation changes which element is the maximum.
    check(Case::new("POOL_2D max").eps(1e-3), |c| {
        c.pool_2d(&param(c, "a", &[8, 6, 2, 1]), PoolOp::Max, 3, 2, 2, 2, 0.0, 0.0).unwrap().into()
    });
}

#[test]
fn cross_entropy_loss() {
    // ggml's test_cross_entropy_loss settings (4-point rule) with one-hot labels, as
    // classification uses them, and a smaller step.
    check(Case::new("CROSS_ENTROPY_LOSS").eps(0.3).precise(), |c: &Context| {
        let logits = param(c, "logits", &[10, 5, 2, 1]);
        let labels = input(c, "labels", &[10, 5, 2, 1]);
        let pick = uniform(10, 3, 0.0, 10.0);
        let one_hot: Vec<f32> =
            (0..100).map(|i| if (i % 10) as f32 == pick[i / 10].floor() { 1.0 } else { 0.0 }).collect();
        Built { out: c.cross_entropy_loss(&logits, &labels).unwrap(), fixed: vec![(labels, one_hot)] }
    });
}
