//! Finite-difference checks of the layout rules: copies, reshapes, views (strided and
//! offset), permutes, SET/ACC windows, row gathers, concat, pad, diag and the masks.

use crate::fd::{check, input, param, Built, Case};
use weft::{Context, Tensor, Type};

const NE: [i64; 4] = [4, 3, 2, 2];

fn a(c: &Context) -> Tensor {
    param(c, "a", &NE)
}

#[test]
fn copies_and_reshapes() {
    check(Case::new("DUP"), |c| c.dup(&a(c)).unwrap().into());
    check(Case::new("CPY to another shape"), |c| c.cpy(&a(c), &input(c, "dst", &[12, 4])).unwrap().into());
    check(Case::new("CONT of a transpose"), |c| c.cont(&c.transpose(&a(c)).unwrap()).unwrap().into());
    check(Case::new("CONT_4D to another shape"), |c| c.cont_4d(&a(c), 6, 8, 1, 1).unwrap().into());
    check(Case::new("RESHAPE"), |c| c.reshape_2d(&a(c), 12, 4).unwrap().into());
    check(Case::new("PERMUTE"), |c| c.permute(&a(c), [2, 0, 3, 1]).unwrap().into());
    check(Case::new("TRANSPOSE"), |c| c.transpose(&a(c)).unwrap().into());
}

#[test]
fn views() {
    // test-backend-ops' non-contiguous input: every third element of each row.
    check(Case::new("VIEW strided rows"), |c| {
        let base = param(c, "a", &[12, 3, 2, 2]);
        let nb = base.nb();
        c.view_4d(&base, 4, 3, 2, 2, nb[1], nb[2], nb[3], 8).unwrap().into()
    });
    check(Case::new("VIEW_1D at an offset"), |c| c.view_1d(&a(c), 10, 4 * 7).unwrap().into());
    // Two overlapping views of one parameter: their windows add up.
    check(Case::new("VIEW x2 overlapping"), |c| {
        let base = param(c, "a", &[8, 3]);
        let v1 = c.view_2d(&base, 5, 3, base.nb()[1], 0).unwrap();
        let v2 = c.view_2d(&base, 5, 3, base.nb()[1], 3 * 4).unwrap();
        c.mul(&v1, &v2).unwrap().into()
    });
    // A view whose rows feed an op that needs them contiguous.
    check(Case::new("VIEW then SOFT_MAX").precise(), |c| {
        let base = param(c, "a", &[6, 4]);
        let v = c.view_2d(&base, 4, 4, base.nb()[1], 4).unwrap();
        c.soft_max(&c.cont(&v).unwrap()).unwrap().into()
    });
}

#[test]
fn set_and_acc() {
    for inplace_name in ["SET", "ACC"] {
        check(Case::new(inplace_name), |c| {
            let a = a(c);
            let b = param(c, "b", &[2, 2, 1, 2]);
            let nb = a.nb();
            let offset = nb[1] + 4;
            let out = if inplace_name == "SET" {
                c.set(&a, &b, nb[1], nb[2], nb[3], offset, false)
            } else {
                c.acc(&a, &b, nb[1], nb[2], nb[3], offset, false)
            };
            out.unwrap().into()
        });
    }
}

#[test]
fn rows() {
    check(Case::new("GET_ROWS (repeated rows)"), |c| {
        let a = param(c, "a", &[4, 6]);
        let idx = c.new_tensor_1d(Type::I32, 5).unwrap();
        Built { out: c.get_rows(&a, &idx).unwrap(), fixed: vec![(idx, vec![0.0, 3.0, 3.0, 5.0, 1.0])] }
    });
    check(Case::new("GET_ROWS_BACK"), |c| {
        let a = param(c, "a", &[4, 5]);
        let idx = c.new_tensor_1d(Type::I32, 4).unwrap();
        let out = c.get_rows_back(&a, &idx, &input(c, "shape", &[4, 6])).unwrap();
        Built { out, fixed: vec![(idx, vec![2.0, 0.0, 2.0, 5.0])] }
    });
}

#[test]
fn concat() {
    for dim in 0..4 {
        let name = ["CONCAT dim 0", "CONCAT dim 1", "CONCAT dim 2", "CONCAT dim 3"][dim];
        check(Case::new(name), |c| {
            let mut nb = NE;
            nb[dim] = 1 + dim as i64 % 2;
            let a = param(c, "a", &NE);
            let b = param(c, "b", &nb);
            c.concat(&a, &b, dim as i32).unwrap().into()
        });
    }
}

#[test]
fn pad_and_diag() {
    check(Case::new("PAD"), |c| c.pad(&a(c), 1, 2, 0, 1).unwrap().into());
    check(Case::new("PAD cropping"), |c| c.pad(&a(c), -1, 1, -1, 0).unwrap().into());
    check(Case::new("DIAG"), |c| c.diag(&param(c, "a", &[4, 1, 2, 1])).unwrap().into());
}

#[test]
fn masks() {
    // The -inf entries go through a softmax, as in attention (a plain sum would be -inf).
    check(Case::new("DIAG_MASK_INF + SOFT_MAX").precise(), |c| {
        c.soft_max(&c.diag_mask_inf(&param(c, "a", &[5, 5, 2, 1]), 1, false).unwrap()).unwrap().into()
    });
    check(Case::new("DIAG_MASK_ZERO"), |c| c.diag_mask_zero(&param(c, "a", &[5, 5, 2, 1]), 2, false).unwrap().into());
}
