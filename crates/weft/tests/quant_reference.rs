//! weft's quant code against ggml's own outputs (the reference set described in
//! shared/ggml-reference/README.md):
//!
//! - `CPY` f32/f16 -> quant: ggml quantized the (possibly permuted) source row by row with the
//!   type's `from_float`; weft's `quantize_row` of the same rows must give the same bytes.
//! - `GET_ROWS` of quant blocks: the f32 output is ggml's `dequantize_row`; weft's must match
//!   bit for bit.
//! - `MUL_MAT` of quant x f32 (unpermuted cases): ggml quantized `b` to the vec_dot type and
//!   ran its (SIMD) dot products; weft's scalar `vec_dot` must agree within the case's NMSE
//!   tolerance (summation order differs, so not bit for bit).
//!
//! The set lives outside the repository (`../shared/ggml-reference/eval` from the repo root, or
//! `WEFT_GGML_REFERENCE`). Without it the tests print a note and pass.

use std::path::{Path, PathBuf};

use weft::gguf::{GgufFile, TensorInfo};
use weft::types::quant::{dequantize_row, quantize_row, quantize_row_for_dot, vec_dot, vec_dot_type};
use weft::types::{bf16_to_f32, f16_to_f32};
use weft::Type;

fn reference_dir() -> PathBuf {
    match std::env::var_os("WEFT_GGML_REFERENCE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ggml-reference/eval"),
    }
}

/// The reference files of `op` whose case quantizes or dequantizes, sorted by name.
fn cases(op: &str) -> Option<Vec<(PathBuf, GgufFile)>> {
    let dir = reference_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("note: {} not found; skipping the ggml reference checks", dir.display());
        return None;
    };
    let prefix = format!("{op}_");
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect();
    paths.sort();
    Some(paths.into_iter().map(|p| (p.clone(), GgufFile::open(&p).unwrap())).collect())
}

fn tensor<'a>(f: &'a GgufFile, name: &str) -> (&'a TensorInfo, &'a [u8]) {
    let info = f.tensor(name).unwrap_or_else(|| panic!("no tensor {name}"));
    (info, f.tensor_data(info))
}

/// f32 / f16 / bf16 tensor data as f32.
fn floats(ty: Type, data: &[u8]) -> Vec<f32> {
    match ty {
        Type::F32 => data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
        Type::F16 => data.chunks_exact(2).map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect(),
        Type::BF16 => data.chunks_exact(2).map(|c| bf16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect(),
        _ => panic!("{ty} is not a float type"),
    }
}

/// The integers inside `name=[a,b,...]` of a case name.
fn list_param(case: &str, name: &str) -> Vec<i64> {
    let start = case.find(&format!("{name}=[")).unwrap_or_else(|| panic!("{case}: no {name}")) + name.len() + 2;
    let end = start + case[start..].find(']').unwrap();
    case[start..end].split(',').map(|v| v.trim().parse().unwrap()).collect()
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Elements of a contiguous 4-d tensor `src` (shape `ne`) in the order of
/// `ggml_permute(src, p0, p1, p2, p3)` walked contiguously: source axis `i` becomes axis `p[i]`.
fn permuted(src: &[f32], ne: [usize; 4], p: [usize; 4]) -> Vec<f32> {
    let mut pne = [0usize; 4];
    for i in 0..4 {
        pne[p[i]] = ne[i];
    }
    let stride = [1, ne[0], ne[0] * ne[1], ne[0] * ne[1] * ne[2]];
    let mut out = Vec::with_capacity(src.len());
    for r3 in 0..pne[3] {
        for r2 in 0..pne[2] {
            for r1 in 0..pne[1] {
                for r0 in 0..pne[0] {
                    let r = [r0, r1, r2, r3];
                    out.push(src[(0..4).map(|i| r[p[i]] * stride[i]).sum::<usize>()]);
                }
            }
        }
    }
    out
}

#[test]
fn cpy_into_quant_types_matches_ggml_bit_for_bit() {
    let Some(files) = cases("CPY") else { return };
    let (mut checked, mut mismatched) = (0, Vec::new());
    for (path, f) in files {
        let case = f.get_str("case.name").unwrap().to_string();
        let (src_info, src_bytes) = tensor(&f, "input.0");
        let (out_info, want) = tensor(&f, "output");
        if !out_info.ty.is_quantized() {
            continue;
        }
        let ne = src_info.ne.map(|n| n as usize);
        let p = list_param(&case, "permute");
        let src = floats(src_info.ty, src_bytes);
        let rows = if p.iter().sum::<i64>() > 0 {
            permuted(&src, ne, [p[0], p[1], p[2], p[3]].map(|v| v as usize))
        } else {
            src
        };
        let ty = out_info.ty;
        let row_size = ty.row_size(ne[0]);
        let mut got = vec![0u8; want.len()];
        for (x, y) in rows.chunks_exact(ne[0]).zip(got.chunks_exact_mut(row_size)) {
            quantize_row(ty, x, y).unwrap_or_else(|e| panic!("{case}: {e}"));
        }
        checked += 1;
        if got != want {
            let blocks = got.chunks(ty.type_size()).zip(want.chunks(ty.type_size())).filter(|(a, b)| a != b).count();
            mismatched.push(format!("{} ({blocks} of {} blocks differ)", file_name(&path), got.len() / ty.type_size()));
        }
    }
    eprintln!("CPY into quant types: {checked} files, {} bit-exact", checked - mismatched.len());
    assert!(checked > 0, "no CPY-into-quant files found");
    assert!(mismatched.is_empty(), "not bit-exact with ggml:\n{}", mismatched.join("\n"));
}

#[test]
fn get_rows_of_quant_types_matches_ggml_bit_for_bit() {
    let Some(files) = cases("GET_ROWS") else { return };
    let (mut checked, mut mismatched) = (0, Vec::new());
    for (path, f) in files {
        let case = f.get_str("case.name").unwrap().to_string();
        let (in_info, in_bytes) = tensor(&f, "input.0");
        let (rows_info, rows_bytes) = tensor(&f, "input.1");
        let (out_info, out_bytes) = tensor(&f, "output");
        let ty = in_info.ty;
        if !ty.is_quantized() {
            continue;
        }
        // in: [n, m, b]; rows: [r, b] (i32), possibly viewed as [r/2, b] with the row stride
        // of the full tensor; out: [n, r', b] f32.
        let n = in_info.ne[0] as usize;
        let m = in_info.ne[1] as usize;
        let rows: Vec<i32> = rows_bytes.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect();
        let r_full = rows_info.ne[0] as usize;
        let r_out = out_info.ne[1] as usize;
        let want = floats(Type::F32, out_bytes);
        let row_size = ty.row_size(n);
        let mut got = vec![0f32; want.len()];
        for (ob, out_rows) in got.chunks_exact_mut(n * r_out).enumerate() {
            for (j, o) in out_rows.chunks_exact_mut(n).enumerate() {
                let row = rows[ob * r_full + j] as usize;
                let start = (ob * m + row) * row_size;
                dequantize_row(ty, &in_bytes[start..start + row_size], o).unwrap_or_else(|e| panic!("{case}: {e}"));
            }
        }
        checked += 1;
        let differ = got.iter().zip(&want).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        if differ > 0 {
            mismatched.push(format!("{} ({differ} of {} values differ)", file_name(&path), want.len()));
        }
    }
    eprintln!("GET_ROWS of quant types: {checked} files, {} bit-exact", checked - mismatched.len());
    assert!(checked > 0, "no GET_ROWS quant files found");
    assert!(mismatched.is_empty(), "not bit-exact with ggml:\n{}", mismatched.join("\n"));
}

#[test]
fn mul_mat_of_quant_types_is_within_ggml_tolerance() {
    let Some(files) = cases("MUL_MAT") else { return };
    let mut checked = 0;
    let mut worst = 0f64;
    let mut failures = Vec::new();
    for (path, f) in files {
        let case = f.get_str("case.name").unwrap().to_string();
        if !case.starts_with("MUL_MAT(") || list_param(&case, "per") != [0, 1, 2, 3] {
            continue;
        }
        let (a_info, a_bytes) = tensor(&f, "input.0");
        let (b_info, b_bytes) = tensor(&f, "input.1");
        let (_, out_bytes) = tensor(&f, "output");
        let ty = a_info.ty;
        if !ty.is_quantized() || b_info.ty != Type::F32 {
            continue;
        }
        let [k, m, a2, a3] = a_info.ne.map(|v| v as usize);
        let [_, n, b2, b3] = b_info.ne.map(|v| v as usize);
        let b = floats(Type::F32, b_bytes);
        let want = floats(Type::F32, out_bytes);
        let dot_ty = vec_dot_type(ty);
        let (a_row, q_row) = (ty.row_size(k), dot_ty.row_size(k));
        let mut got = Vec::with_capacity(want.len());
        let mut qb = vec![0u8; q_row];
        for i3 in 0..b3 {
            for i2 in 0..b2 {
                // ggml broadcasts a over the batch dims of b.
                let (j2, j3) = (i2 / (b2 / a2), i3 / (b3 / a3));
                for j in 0..n {
                    let brow = &b[((i3 * b2 + i2) * n + j) * k..][..k];
                    quantize_row_for_dot(dot_ty, brow, &mut qb).unwrap();
                    for i in 0..m {
                        let start = ((j3 * a2 + j2) * m + i) * a_row;
                        got.push(vec_dot(ty, k, &a_bytes[start..start + a_row], &qb).unwrap());
                    }
                }
            }
        }
        let (mut err, mut norm) = (0f64, 0f64);
        for (&g, &w) in got.iter().zip(&want) {
            err += (g as f64 - w as f64).powi(2);
            norm += (g as f64).powi(2);
        }
        let nmse = err / norm;
        let max = f.get_f64("case.max_nmse_err").unwrap();
        checked += 1;
        worst = worst.max(nmse);
        if nmse.is_nan() || nmse > max {
            failures.push(format!("{}: NMSE {nmse:e} > {max:e}", file_name(&path)));
        }
    }
    eprintln!(
        "MUL_MAT of quant types: {checked} unpermuted files, {} within tolerance (largest NMSE {worst:e})",
        checked - failures.len()
    );
    assert!(checked > 0, "no MUL_MAT quant files found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
