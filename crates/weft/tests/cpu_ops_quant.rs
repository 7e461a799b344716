//! CPU kernels with quantized tensors against independent truth: reference loops over the
//! quant module's row functions (quantize b rows, vec_dot, dequantize rows) written here, f64
//! loops over dequantized values, and the f32 kernels within the type's quantization error.

mod common;
use common::*;
use weft::backend::cpu::CpuDevice;
use weft::backend::{tensor_get, tensor_set, tensor_to_f32, Device};
use weft::types::quant::{self, dequantize_row, quantize_row_for_dot, quantize_row_for_store, vec_dot, vec_dot_type};
use weft::types::{f16_to_f32, f32_to_f16};
use weft::{Context, Tensor, Type};

/// Every quantized type the quant module serves (all but the repacked layouts).
fn quant_types() -> Vec<Type> {
    Type::ALL.iter().copied().filter(|&t| t.is_quantized() && quant::serves(t)).collect()
}

fn bytes(t: &Tensor) -> Vec<u8> {
    let mut b = vec![0u8; t.nbytes()];
    tensor_get(t, &mut b, 0).unwrap();
    b
}

/// `v` quantized row by row (rows of `n`) as weft stores f32 values into `ty`.
fn quantize_rows(ty: Type, v: &[f32], n: usize) -> Vec<u8> {
    v.chunks(n)
        .flat_map(|row| {
            let mut out = vec![0u8; ty.row_size(n)];
            quantize_row_for_store(ty, row, &mut out).unwrap();
            out
        })
        .collect()
}

fn dequantize(ty: Type, b: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    dequantize_row(ty, b, &mut out).unwrap();
    out
}

/// A row converted to `ty`'s vec_dot type, as ggml's mul_mat converts b rows.
fn for_dot(ty: Type, row: &[f32]) -> Vec<u8> {
    let dt = vec_dot_type(ty);
    let mut out = vec![0u8; dt.row_size(row.len())];
    quantize_row_for_dot(dt, row, &mut out).unwrap();
    out
}

/// sum (got - want)^2 / sum want^2.
fn nmse(got: &[f32], want: &[f64]) -> f64 {
    let err: f64 = got.iter().zip(want).map(|(&g, &w)| (g as f64 - w).powi(2)).sum();
    err / want.iter().map(|w| w * w).sum::<f64>()
}

/// Within rounding of the scalar block dots: the vector kernels (and the GEMM, for many
/// columns) add the same integer block sums in other float orders.
fn assert_rounding(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    let e = nmse(got, &want.iter().map(|&x| x as f64).collect::<Vec<_>>());
    assert!(e < 1e-10, "{what}: NMSE {e} against the scalar block dots");
}

fn f16_round(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16_to_f32(f32_to_f16(x))).collect()
}

/// A quantized tensor of `ne` filled from rand_vec(seed): its bytes and dequantized values.
fn quant_input(ctx: &Context, ty: Type, ne: [i64; 4], seed: u64) -> (Tensor, Vec<f32>) {
    let t = ctx.new_tensor(ty, &ne).unwrap();
    set(&t, &rand_vec(t.nelements() as usize, seed));
    let deq = dequantize(ty, &bytes(&t), t.nelements() as usize);
    (t, deq)
}

fn f32_input(ctx: &Context, ty: Type, ne: [i64; 4], seed: u64) -> (Tensor, Vec<f32>) {
    let t = ctx.new_tensor(ty, &ne).unwrap();
    let v = rand_vec(t.nelements() as usize, seed);
    set(&t, &v);
    let stored = tensor_to_f32(&t).unwrap();
    (t, stored)
}

// ---------------------------------------------------------------------------------------
// MUL_MAT / MUL_MAT_ID

/// MUL_MAT's reference: every b row converted to a's vec_dot type, dotted with every a row
/// (a [k, m, a2, a3] broadcast over b [k, n, b2, b3]); `brows` are b's rows in flat order.
fn mul_mat_reference(ty: Type, a: &[u8], ne_a: [usize; 4], brows: &[Vec<u8>], ne_b: [usize; 4]) -> Vec<f32> {
    let (k, m, n) = (ne_a[0], ne_a[1], ne_b[1]);
    let rs = ty.row_size(k);
    let mut out = Vec::new();
    for i3 in 0..ne_b[3] {
        for i2 in 0..ne_b[2] {
            let (a2, a3) = (i2 / (ne_b[2] / ne_a[2]), i3 / (ne_b[3] / ne_a[3]));
            for i1 in 0..n {
                let brow = &brows[(i3 * ne_b[2] + i2) * n + i1];
                for i0 in 0..m {
                    let r = (a3 * ne_a[2] + a2) * m + i0;
                    out.push(vec_dot(ty, k, &a[r * rs..(r + 1) * rs], brow).unwrap());
                }
            }
        }
    }
    out
}

/// The same product in f64 from values: a [k, m, ..] times b rows, broadcast as MUL_MAT.
fn mul_mat_f64(a: &[f32], ne_a: [usize; 4], b: &[f32], ne_b: [usize; 4]) -> Vec<f64> {
    let (k, m, n) = (ne_a[0], ne_a[1], ne_b[1]);
    let mut out = Vec::new();
    for i3 in 0..ne_b[3] {
        for i2 in 0..ne_b[2] {
            let (a2, a3) = (i2 / (ne_b[2] / ne_a[2]), i3 / (ne_b[3] / ne_a[3]));
            for i1 in 0..n {
                let br = ((i3 * ne_b[2] + i2) * n + i1) * k;
                for i0 in 0..m {
                    let ar = ((a3 * ne_a[2] + a2) * m + i0) * k;
                    out.push((0..k).map(|j| a[ar + j] as f64 * b[br + j] as f64).sum());
                }
            }
        }
    }
    out
}

#[test]
fn mul_mat_quantized_a_is_ggml_block_dot_on_converted_b_rows() {
    // 7 rows of a: one run of four, one pair and one single where a type has those kernels.
    let (ne_a, ne_b) = ([512usize, 7, 2, 1], [512usize, 3, 2, 2]);
    let as_i64 = |ne: [usize; 4]| ne.map(|x| x as i64);
    for ty in quant_types() {
        let ctx = host_ctx();
        let original = rand_vec(512 * 7 * 2, 1);
        let a = ctx.new_tensor(ty, &as_i64(ne_a)).unwrap();
        set(&a, &original);
        let a_deq = dequantize(ty, &bytes(&a), original.len());
        let (b, vb) = f32_input(&ctx, Type::F32, as_i64(ne_b), 2);
        let out = ctx.mul_mat(&a, &b).unwrap();
        compute(&ctx, &out, 3);
        let got = get(&out);

        // b rows converted to the vec_dot type, then ggml's block dot (to rounding).
        let brows: Vec<Vec<u8>> = vb.chunks(512).map(|r| for_dot(ty, r)).collect();
        assert_rounding(&got, &mul_mat_reference(ty, &bytes(&a), ne_a, &brows, ne_b), &format!("{ty}"));
        // Thread count does not matter.
        compute(&ctx, &out, 1);
        assert_eq!(get(&out), got, "{ty}: 1 thread");

        // Independent truth: the dequantized a times b in f64, off only by b's 8-bit rounding.
        let exact = mul_mat_f64(&a_deq, ne_a, &vb, ne_b);
        let e = nmse(&got, &exact);
        assert!(e < 1e-4, "{ty}: NMSE {e} against dequantized a . b");
        // Against the unquantized product: within a's own quantization error.
        let a_err = nmse(&a_deq, &original.iter().map(|&x| x as f64).collect::<Vec<_>>());
        let e = nmse(&got, &mul_mat_f64(&original, ne_a, &vb, ne_b));
        assert!(e < 3.0 * a_err + 1e-4, "{ty}: NMSE {e} against f32 a . b, a's own error {a_err}");
    }
}

#[test]
fn mul_mat_many_columns_takes_the_gemm_and_agrees_with_block_dots() {
    // 37 rows and 35 columns (past GEMM_MIN_COLS): tails of every row and column tile; two
    // matrices of a broadcast over 2 x 3 of b; 32-element formats with k = 352, not whole
    // 256-element groups.
    let as_i64 = |ne: [usize; 4]| ne.map(|x| x as i64);
    for ty in quant_types() {
        let k = if ty.blck_size() == 32 { 352 } else { 512 };
        let (ne_a, ne_b) = ([k, 37, 2, 1], [k, 35, 2, 3]);
        let ctx = host_ctx();
        let (a, a_deq) = quant_input(&ctx, ty, as_i64(ne_a), 21);
        let (b, vb) = f32_input(&ctx, Type::F32, as_i64(ne_b), 22);
        let out = ctx.mul_mat(&a, &b).unwrap();
        compute(&ctx, &out, 3);
        let got = get(&out);
        let brows: Vec<Vec<u8>> = vb.chunks(k).map(|r| for_dot(ty, r)).collect();
        assert_rounding(&got, &mul_mat_reference(ty, &bytes(&a), ne_a, &brows, ne_b), &format!("{ty}"));
        let e = nmse(&got, &mul_mat_f64(&a_deq, ne_a, &vb, ne_b));
        assert!(e < 1e-4, "{ty}: NMSE {e} against dequantized a . b");
        compute(&ctx, &out, 1);
        assert_eq!(get(&out), got, "{ty}: 1 thread");
    }
}

#[test]
fn mul_mat_quantized_a_takes_f16_permuted_and_preconverted_b() {
    let ctx = host_ctx();
    let ty = Type::Q4_0;
    let (a, _) = quant_input(&ctx, ty, [256, 4, 1, 1], 3);
    let ne_a = [256, 4, 1, 1];
    // f16 b: rows widened exactly, then converted like f32 rows.
    let (b16, v16) = f32_input(&ctx, Type::F16, [256, 3, 1, 1], 4);
    let out = ctx.mul_mat(&a, &b16).unwrap();
    compute(&ctx, &out, 2);
    let brows: Vec<Vec<u8>> = v16.chunks(256).map(|r| for_dot(ty, r)).collect();
    assert_rounding(&get(&out), &mul_mat_reference(ty, &bytes(&a), ne_a, &brows, [256, 3, 1, 1]), "f16 b");
    assert_eq!(v16, f16_round(&v16));

    // b a permuted view (rows strided): the logical rows are multiplied.
    let base = ctx.new_tensor(Type::F32, &[256, 2, 3, 1]).unwrap();
    set(&base, &rand_vec(256 * 6, 5));
    let bp = ctx.permute(&base, [0, 2, 1, 3]).unwrap();
    let logical = tensor_to_f32(&bp).unwrap();
    let out = ctx.mul_mat(&a, &bp).unwrap();
    compute(&ctx, &out, 2);
    let brows: Vec<Vec<u8>> = logical.chunks(256).map(|r| for_dot(ty, r)).collect();
    assert_rounding(&get(&out), &mul_mat_reference(ty, &bytes(&a), ne_a, &brows, [256, 3, 2, 1]), "permuted b");

    // b already in the vec_dot type (q8_0 for q4_0): used as stored.
    let bq = ctx.new_tensor(Type::Q8_0, &[256, 3, 1, 1]).unwrap();
    let vb = rand_vec(768, 6);
    let qrows: Vec<Vec<u8>> = vb.chunks(256).map(|r| for_dot(ty, r)).collect();
    tensor_set(&bq, &qrows.concat(), 0).unwrap();
    let out = ctx.mul_mat(&a, &bq).unwrap();
    compute(&ctx, &out, 2);
    assert_rounding(&get(&out), &mul_mat_reference(ty, &bytes(&a), ne_a, &qrows, [256, 3, 1, 1]), "q8_0 b");
}

/// MUL_MAT_ID of quantized experts [k, m, n_expert] with f32 b [k, n_b, n_tokens] and `ids`
/// (2 slots per token) against ggml's scalar block dots of the converted b rows, per type;
/// the result must not depend on the thread count.
fn check_mul_mat_id(types: &[Type], m: usize, n_expert: usize, n_b: usize, ids: &[i32]) {
    let k = 256usize;
    let n_tokens = ids.len() / 2;
    for &ty in types {
        let ctx = host_ctx();
        let (a, _) = quant_input(&ctx, ty, [k as i64, m as i64, n_expert as i64, 1], 7);
        let (b, vb) = f32_input(&ctx, Type::F32, [k as i64, n_b as i64, n_tokens as i64, 1], 8);
        let t_ids = ctx.new_tensor_2d(Type::I32, 2, n_tokens as i64).unwrap();
        set_i32(&t_ids, ids);
        let out = ctx.mul_mat_id(&a, &b, &t_ids).unwrap();
        compute(&ctx, &out, 3);
        let got = get(&out);
        let (ab, rs) = (bytes(&a), ty.row_size(k));
        let mut want = vec![0f32; got.len()];
        for token in 0..n_tokens {
            for slot in 0..2 {
                let e = ids[token * 2 + slot] as usize;
                let brow = for_dot(ty, &vb[(token * n_b + slot % n_b) * k..][..k]);
                for i0 in 0..m {
                    let r = e * m + i0;
                    want[(token * 2 + slot) * m + i0] = vec_dot(ty, k, &ab[r * rs..(r + 1) * rs], &brow).unwrap();
                }
            }
        }
        assert_rounding(&got, &want, &format!("{ty}"));
        compute(&ctx, &out, 1);
        assert_eq!(get(&out), got, "{ty}: 1 thread");
    }
}

#[test]
fn mul_mat_id_quantized_experts_dot_converted_b_rows() {
    let types = [Type::Q4_0, Type::Q4_K, Type::IQ2_XXS, Type::Q8_0, Type::Q5_1];
    check_mul_mat_id(&types, 70, 4, 2, &[3, 0, 1, 1, 2, 3]);
}

#[test]
fn mul_mat_id_expert_used_by_many_tokens_takes_the_gemm() {
    // 40 tokens: expert 0 in slot 0 of 37 of them (past GEMM_MIN_COLS: the GEMM, with
    // column tails), experts 1 and 2 the rest (few pairs: vec_dot); b broadcast over slots.
    let ids: Vec<i32> = (0..40).flat_map(|t| [if t < 37 { 0 } else { 2 }, 1 + (t % 2)]).collect();
    let types = [Type::Q4_0, Type::Q4_K, Type::Q6_K, Type::IQ2_XXS, Type::IQ4_NL, Type::Q5_1];
    check_mul_mat_id(&types, 70, 3, 1, &ids);
}

// ---------------------------------------------------------------------------------------
// OUT_PROD, GET_ROWS

#[test]
fn out_prod_dequantizes_a_then_accumulates_fused_over_j() {
    let (m, n, p) = (256usize, 4usize, 3usize);
    for ty in [Type::Q4_0, Type::Q4_K, Type::IQ2_XXS, Type::Q6_K] {
        let ctx = host_ctx();
        let (a, ad) = quant_input(&ctx, ty, [m as i64, n as i64, 2, 1], 9);
        let (b, vb) = f32_input(&ctx, Type::F32, [p as i64, n as i64, 2, 1], 10);
        let out = ctx.out_prod(&a, &b).unwrap();
        compute(&ctx, &out, 2);
        let mut want = vec![0f32; m * p * 2];
        for i2 in 0..2 {
            for i1 in 0..p {
                let row = &mut want[(i2 * p + i1) * m..][..m];
                for j in 0..n {
                    let w = vb[(i2 * n + j) * p + i1];
                    for (i0, y) in row.iter_mut().enumerate() {
                        *y = ad[(i2 * n + j) * m + i0].mul_add(w, *y);
                    }
                }
            }
        }
        assert_eq!(get(&out), want, "{ty}");
    }
}

#[test]
fn get_rows_dequantizes_the_picked_rows() {
    for ty in quant_types() {
        let ctx = host_ctx();
        let (a, ad) = quant_input(&ctx, ty, [256, 5, 2, 1], 11);
        let rows = ctx.new_tensor_2d(Type::I32, 3, 2).unwrap();
        let idx = [4, 0, 4, 1, 3, 2];
        set_i32(&rows, &idx);
        let out = ctx.get_rows(&a, &rows).unwrap();
        compute(&ctx, &out, 2);
        let want: Vec<f32> =
            idx.iter().enumerate().flat_map(|(i, &r)| ad[((i / 3) * 5 + r as usize) * 256..][..256].to_vec()).collect();
        assert_eq!(get(&out), want, "{ty}");
    }
}

// ---------------------------------------------------------------------------------------
// CPY / DUP / CONT

#[test]
fn cpy_into_every_quantized_type_quantizes_each_row_as_from_float() {
    for ty in quant_types() {
        for src_ty in [Type::F32, Type::F16] {
            let ctx = host_ctx();
            let (s, vs) = f32_input(&ctx, src_ty, [512, 3, 2, 1], 12);
            let d = ctx.new_tensor(ty, &[512, 3, 2, 1]).unwrap();
            let out = ctx.cpy(&s, &d).unwrap();
            compute(&ctx, &out, 2);
            assert_eq!(bytes(&d), quantize_rows(ty, &vs, 512), "{src_ty} -> {ty}");
        }
        // A permuted source (rows strided): its logical rows, in order.
        let ctx = host_ctx();
        let (base, _) = f32_input(&ctx, Type::F32, [512, 2, 3, 1], 13);
        let sp = ctx.permute(&base, [0, 2, 1, 3]).unwrap();
        let d = ctx.new_tensor(ty, &sp.ne()).unwrap();
        let out = ctx.cpy(&sp, &d).unwrap();
        compute(&ctx, &out, 2);
        assert_eq!(bytes(&d), quantize_rows(ty, &tensor_to_f32(&sp).unwrap(), 512), "permuted f32 -> {ty}");
        // Other row lengths: blocks fall at the same flat positions as src rows of 512.
        let (s, vs) = f32_input(&ctx, Type::F32, [512, 2, 1, 1], 14);
        let d = ctx.new_tensor(ty, &[256, 4, 1, 1]).unwrap();
        let out = ctx.cpy(&s, &d).unwrap();
        compute(&ctx, &out, 2);
        assert_eq!(bytes(&d), quantize_rows(ty, &vs, 512), "f32 [512,2] -> {ty} [256,4]");
    }
}

#[test]
fn cpy_out_of_quantized_types_dequantizes_or_copies_blocks() {
    for ty in [Type::Q4_0, Type::Q5_K, Type::IQ3_S, Type::TQ1_0] {
        let ctx = host_ctx();
        let (s, sd) = quant_input(&ctx, ty, [512, 3, 1, 1], 15);
        // Into f32 and f16, same shape and reshaped.
        for (dt, ne) in [(Type::F32, [512, 3, 1, 1]), (Type::F16, [256, 6, 1, 1])] {
            let d = ctx.new_tensor(dt, &ne).unwrap();
            let out = ctx.cpy(&s, &d).unwrap();
            compute(&ctx, &out, 2);
            let want = if dt == Type::F16 { f16_round(&sd) } else { sd.clone() };
            assert_eq!(tensor_to_f32(&d).unwrap(), want, "{ty} -> {dt}");
        }
        // Into its own type: the blocks, unchanged (contiguous, reshaped, and from a view
        // whose rows are strided).
        let d = ctx.new_tensor(ty, &[256, 6, 1, 1]).unwrap();
        let out = ctx.cpy(&s, &d).unwrap();
        compute(&ctx, &out, 2);
        assert_eq!(bytes(&d), bytes(&s), "{ty} -> {ty}");
        let (base, _) = quant_input(&ctx, ty, [256, 2, 3, 1], 16);
        let view = ctx.permute(&base, [0, 2, 1, 3]).unwrap();
        let out = ctx.cont(&view).unwrap();
        compute(&ctx, &out, 2);
        let (rs, bb) = (ty.row_size(256), bytes(&base));
        let want: Vec<u8> = (0..6).flat_map(|r| bb[((r % 3) * 2 + r / 3) * rs..][..rs].to_vec()).collect();
        assert_eq!(bytes(&out), want, "cont of a permuted {ty}");
        // Into another quantized type: dequantized, then quantized.
        let d = ctx.new_tensor(Type::Q8_0, &[512, 3, 1, 1]).unwrap();
        let out = ctx.cpy(&s, &d).unwrap();
        compute(&ctx, &out, 2);
        assert_eq!(bytes(&d), quantize_rows(Type::Q8_0, &sd, 512), "{ty} -> q8_0");
    }
}

#[test]
fn cpy_of_non_finite_values_into_a_grid_type_is_an_error() {
    for ty in [Type::IQ2_S, Type::IQ3_XXS, Type::IQ2_XXS, Type::IQ1_S] {
        let ctx = host_ctx();
        let s = ctx.new_tensor_1d(Type::F32, 256).unwrap();
        let mut v = rand_vec(256, 17);
        v[5] = f32::NAN;
        set(&s, &v);
        let d = ctx.new_tensor_1d(ty, 256).unwrap();
        let out = ctx.cpy(&s, &d).unwrap();
        let e = try_compute(&ctx, &out, 2).unwrap_err();
        assert!(e.message.contains(ty.name()) && e.message.contains("non-finite"), "{e}");
    }
}

// ---------------------------------------------------------------------------------------
// ADD, ADD1

#[test]
fn add_and_add1_on_quantized_a_dequantize_add_and_requantize() {
    for ty in [Type::Q4_0, Type::Q8_0, Type::Q3_K, Type::IQ4_XS, Type::IQ1_M] {
        let ctx = host_ctx();
        let (a, ad) = quant_input(&ctx, ty, [512, 3, 1, 1], 18);
        let (b, vb) = f32_input(&ctx, Type::F32, [512, 1, 1, 1], 19);
        let sum: Vec<f32> = ad.iter().enumerate().map(|(i, &x)| x + vb[i % 512]).collect();
        // Into a's type (b broadcast over rows).
        let out = ctx.add(&a, &b).unwrap();
        compute(&ctx, &out, 2);
        assert_eq!(out.ty(), ty);
        assert_eq!(bytes(&out), quantize_rows(ty, &sum, 512), "add {ty}");
        // Into f32 (addCast): the f32 sums themselves.
        let out = ctx.add_cast(&a, &b, Type::F32).unwrap();
        compute(&ctx, &out, 2);
        assert_eq!(get(&out), sum, "addCast {ty} -> f32");
        // ADD1 of a scalar.
        let s = ctx.new_tensor_1d(Type::F32, 1).unwrap();
        set(&s, &[0.25]);
        let out = ctx.add1(&a, &s).unwrap();
        compute(&ctx, &out, 2);
        let plus: Vec<f32> = ad.iter().map(|&x| x + 0.25).collect();
        assert_eq!(bytes(&out), quantize_rows(ty, &plus, 512), "add1 {ty}");
    }
}

// ---------------------------------------------------------------------------------------
// FLASH_ATTN_EXT

#[test]
fn flash_attn_with_quantized_k_v_matches_f64_attention_over_dequantized_rows() {
    let (d, n_kv, nb, nh) = (64usize, 40usize, 3usize, 2usize);
    let scale = 0.125f32;
    for (kt, vt) in
        [(Type::Q8_0, Type::Q8_0), (Type::Q4_0, Type::Q4_0), (Type::Q4_0, Type::Q8_0), (Type::IQ4_NL, Type::Q5_1)]
    {
        let ctx = host_ctx();
        let (q, vq) = f32_input(&ctx, Type::F32, [d as i64, nb as i64, nh as i64, 1], 20);
        let (k, kd) = quant_input(&ctx, kt, [d as i64, n_kv as i64, nh as i64, 1], 21);
        let (v, vd) = quant_input(&ctx, vt, [d as i64, n_kv as i64, nh as i64, 1], 22);
        let out = ctx.flash_attn_ext(&q, &k, &v, None, scale, 0.0, 0.0).unwrap();
        compute(&ctx, &out, 2);
        let got = get(&out);
        for h in 0..nh {
            for i in 0..nb {
                // The query as K's dot sees it: converted to q8_0 / q8_1, then its values.
                let qrow = &vq[(h * nb + i) * d..][..d];
                let dt = vec_dot_type(kt);
                let qc = dequantize(dt, &for_dot(kt, qrow), d);
                let s: Vec<f64> = (0..n_kv)
                    .map(|c| {
                        let kr = &kd[(h * n_kv + c) * d..][..d];
                        kr.iter().zip(&qc).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>() * scale as f64
                    })
                    .collect();
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let w: Vec<f64> = s.iter().map(|x| (x - mx).exp()).collect();
                let total: f64 = w.iter().sum();
                for j in 0..d {
                    let want: f64 = (0..n_kv).map(|c| w[c] * vd[(h * n_kv + c) * d + j] as f64).sum::<f64>() / total;
                    // dst is [d, n_head, n_batch].
                    let g = got[(i * nh + h) * d + j] as f64;
                    assert!((g - want).abs() < 1e-5 * (1.0 + want.abs()), "{kt}/{vt} h{h} q{i} [{j}]: {g} vs {want}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// What the CPU says it supports

#[test]
fn cpu_supports_exactly_the_quantized_combinations_it_computes() {
    let ctx = Context::new(weft::ContextParams { mem_size: 16 << 20, no_alloc: true }).unwrap();
    let dev = CpuDevice::get();
    let t = |ty: Type, ne: &[i64]| ctx.new_tensor(ty, ne).unwrap();
    let (q4, f32v, f16v) = (t(Type::Q4_0, &[256, 4]), t(Type::F32, &[256, 4]), t(Type::F16, &[256, 4]));
    let yes = |n: Tensor| assert!(dev.supports_op(&n), "{}", n.op().desc());
    let no = |n: Tensor| assert!(!dev.supports_op(&n), "{}", n.op().desc());
    yes(ctx.mul_mat(&q4, &f32v).unwrap());
    yes(ctx.mul_mat(&q4, &f16v).unwrap());
    yes(ctx.mul_mat(&q4, &t(Type::Q8_0, &[256, 4])).unwrap());
    no(ctx.mul_mat(&q4, &t(Type::Q8_1, &[256, 4])).unwrap());
    no(ctx.mul_mat(&t(Type::Q4_0_4_4, &[256, 4]), &f32v).unwrap());
    yes(ctx.out_prod(&t(Type::Q4_K, &[256, 4]), &t(Type::F32, &[3, 4])).unwrap());
    yes(ctx.get_rows(&t(Type::IQ1_M, &[256, 4]), &t(Type::I32, &[2])).unwrap());
    yes(ctx.add(&q4, &f32v).unwrap());
    no(ctx.add(&q4, &f16v).unwrap());
    no(ctx.sub(&q4, &f32v).unwrap());
    yes(ctx.add1(&q4, &t(Type::F32, &[1])).unwrap());
    for ty in quant_types() {
        yes(ctx.cpy(&f32v, &t(ty, &[256, 4])).unwrap());
        yes(ctx.cpy(&f16v, &t(ty, &[256, 4])).unwrap());
    }
    yes(ctx.cpy(&q4, &t(Type::Q8_0, &[256, 4])).unwrap());
    no(ctx.cpy(&t(Type::I32, &[256, 4]), &t(Type::Q4_0, &[256, 4])).unwrap());
    no(ctx.cpy(&f32v, &t(Type::Q4_0_4_8, &[256, 4])).unwrap());
    let q = t(Type::F32, &[256, 3, 2]);
    for (kv, ok) in [(Type::Q8_0, true), (Type::Q4_0, true), (Type::Q4_K, false), (Type::IQ2_XXS, false)] {
        let k = t(kv, &[256, 8, 2]);
        let fa = ctx.flash_attn_ext(&q, &k, &k, None, 1.0, 0.0, 0.0).unwrap();
        assert_eq!(dev.supports_op(&fa), ok, "flash_attn_ext {kv}");
    }
}

// ---------------------------------------------------------------------------------------
// Reading and writing quantized tensors as floats

#[test]
fn quantized_views_read_and_write_as_floats_block_by_block() {
    let ctx = host_ctx();
    let (q, qd) = quant_input(&ctx, Type::Q8_0, [64, 4, 1, 1], 23);
    assert_eq!(tensor_to_f32(&q).unwrap(), qd);
    // Rows 1 and 3 (a strided view): their values, and writing it leaves rows 0 and 2 alone.
    let v = ctx.view_2d(&q, 64, 2, 2 * q.nb()[1], q.nb()[1]).unwrap();
    let rows13: Vec<f32> = [&qd[64..128], &qd[192..256]].concat();
    assert_eq!(tensor_to_f32(&v).unwrap(), rows13);
    weft::backend::tensor_from_f32(&v, &vec![0.5; 128]).unwrap();
    let after = tensor_to_f32(&q).unwrap();
    assert_eq!(&after[..64], &qd[..64]);
    assert!(after[64..128].iter().all(|&x| (x - 0.5).abs() < 1e-2));
    // A transposed quantized tensor steps whole blocks by nb[0] (ggml's tensor_to_float): it
    // reads and writes without error (the values mean little, as in ggml).
    let (sq, _) = quant_input(&ctx, Type::Q8_0, [64, 64, 1, 1], 24);
    let tq = ctx.transpose(&sq).unwrap();
    let n = tensor_to_f32(&tq).unwrap().len();
    weft::backend::tensor_from_f32(&tq, &vec![0.0; n]).unwrap();
}
