//! The ggml reference set: GGUF files written by ggml itself (one per test-backend-ops case,
//! format in shared/ggml-reference/README.md). Every file must open, carry the keys the
//! README lists with the types it gives, hold `input.0..input.N-1` and `output` with sane
//! shapes and data inside the file, and come back byte for byte from weft's writer.
//!
//! The set lives outside the repository: `../shared/ggml-reference/eval` from the repo root,
//! or wherever `WEFT_GGML_REFERENCE` points. Without it the test prints a note and passes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use weft::gguf::{GgufFile, GgufWriter, Value};
use weft::Type;

fn reference_dir() -> PathBuf {
    match std::env::var_os("WEFT_GGML_REFERENCE") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/ggml-reference/eval"),
    }
}

/// Files per op in the full set, from the README's table.
const README_OPS: &[(&str, usize)] = &[
    ("ABS", 4),
    ("ACC", 1),
    ("ADD", 14),
    ("ADD1", 1),
    ("ARANGE", 1),
    ("ARGMAX", 1),
    ("ARGSORT", 4),
    ("CLAMP", 1),
    ("CONCAT", 8),
    ("CONT", 10),
    ("CONV_TRANSPOSE_1D", 8),
    ("COS", 1),
    ("COUNT_EQUAL", 1),
    ("CPY", 76),
    ("CROSS_ENTROPY_LOSS", 1),
    ("DIAG_MASK_INF", 3),
    ("DIV", 14),
    ("DUP", 10),
    ("ELU", 4),
    ("EXP", 4),
    ("FLASH_ATTN_EXT", 1),
    ("GELU", 4),
    ("GELU_QUICK", 4),
    ("GET_ROWS", 93),
    ("GROUP_NORM", 1),
    ("HARDSIGMOID", 4),
    ("HARDSWISH", 4),
    ("IM2COL", 77),
    ("LEAKY_RELU", 1),
    ("LOG", 1),
    ("MUL", 14),
    ("MUL_MAT", 99),
    ("MUL_MAT_ID", 39),
    ("NEG", 4),
    ("NORM", 4),
    ("OPT_STEP_ADAMW", 2),
    ("OUT_PROD", 20),
    ("PAD", 1),
    ("POOL_2D", 128),
    ("RELU", 4),
    ("REPEAT", 14),
    ("RMS_NORM", 4),
    ("ROPE", 96),
    ("RWKV_WKV", 1),
    ("SCALE", 1),
    ("SET", 3),
    ("SGN", 4),
    ("SIGMOID", 4),
    ("SILU", 4),
    ("SIN", 1),
    ("SOFT_MAX", 40),
    ("SQR", 1),
    ("SQRT", 1),
    ("SSM_CONV", 3),
    ("SSM_SCAN", 1),
    ("STEP", 4),
    ("SUM", 1),
    ("SUM_ROWS", 1),
    ("TANH", 4),
    ("TIMESTEP_EMBEDDING", 1),
    ("UPSCALE", 1),
];

/// Every key the README lists (`case.output_note` only where the output was not contiguous).
const README_KEYS: [&str; 7] =
    ["case.name", "case.op", "case.max_nmse_err", "case.set", "case.input_names", "case.graph_ops", "case.output_note"];

/// The README's file naming: `case.name` with every character outside `[A-Za-z0-9_.=,-]`
/// replaced by `_`.
fn file_name_of(case_name: &str) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || "_.=,-".contains(c);
    case_name.chars().map(|c| if keep(c) { c } else { '_' }).collect::<String>() + ".gguf"
}

/// Checks one file; returns its op and the types of its tensors.
fn check_file(path: &std::path::Path) -> Result<(String, Vec<Type>), String> {
    let f = GgufFile::open(path).map_err(|e| e.to_string())?;
    let fail = |msg: String| Err(msg);
    if (f.version(), f.alignment()) != (3, 32) {
        return fail(format!("version {} alignment {}", f.version(), f.alignment()));
    }
    let string = |key: &str| match f.get(key) {
        Some(Value::String(s)) => Ok(s.as_str()),
        other => Err(format!("{key}: expected a string, found {other:?}")),
    };
    let name = string("case.name")?;
    let op = string("case.op")?;
    if string("case.set")? != "eval" {
        return fail("case.set is not \"eval\"".into());
    }
    if !name.starts_with(&format!("{op}(")) {
        return fail(format!("case.name {name:?} is not a case of op {op}"));
    }
    let file_name = path.file_name().unwrap().to_string_lossy();
    if file_name != file_name_of(name) {
        return fail(format!("file name does not follow case.name {name:?}"));
    }
    match f.get("case.max_nmse_err") {
        Some(&Value::F64(e)) if e >= 0.0 && e.is_finite() => {}
        other => return fail(format!("case.max_nmse_err: expected a finite f64 >= 0, found {other:?}")),
    }
    let input_names = f.get_str_array("case.input_names").ok_or("case.input_names is not arr[str]")?;
    let graph_ops = f.get_str_array("case.graph_ops").ok_or("case.graph_ops is not arr[str]")?;
    if graph_ops.is_empty() {
        return fail("case.graph_ops is empty".into());
    }
    let extra: Vec<&str> = f.metadata().iter().map(|(k, _)| k.as_str()).filter(|k| !README_KEYS.contains(k)).collect();
    if !extra.is_empty() {
        return fail(format!("keys the README does not list: {extra:?}"));
    }

    let mut want: Vec<String> = (0..input_names.len()).map(|i| format!("input.{i}")).collect();
    want.push("output".into());
    let names: Vec<&str> = f.tensors().iter().map(|t| t.name.as_str()).collect();
    if names != want {
        return fail(format!("tensors {names:?}, expected {want:?}"));
    }
    for t in f.tensors() {
        let sane = t.ne.iter().all(|&n| (1..=1 << 24).contains(&n)) && t.n_dims <= 4;
        // The data handed out is the file's own bytes at data_offset + offset, inside it.
        let start = f.data_offset() + t.offset as usize;
        let data = f.tensor_data(t);
        let in_file =
            start + t.size <= f.as_bytes().len() && std::ptr::eq(data.as_ptr(), f.as_bytes()[start..].as_ptr());
        if !sane || data.len() != t.size || !in_file {
            return fail(format!("tensor {} ne {:?} size {} out of shape or bounds", t.name, t.ne, t.size));
        }
        if t.ne[0] % t.ty.blck_size() as i64 != 0
            || t.size != t.ty.row_size(t.ne[0] as usize) * t.ne[1..].iter().product::<i64>() as usize
        {
            return fail(format!("tensor {} size {} does not match {} {:?}", t.name, t.size, t.ty, t.ne));
        }
    }
    let out_ty = f.tensor("output").unwrap().ty;
    let want_out = match op {
        "ARGSORT" | "ARGMAX" => Some(Type::I32),
        "COUNT_EQUAL" => Some(Type::I64),
        _ => None,
    };
    if want_out.is_some_and(|t| t != out_ty) {
        return fail(format!("{op} output is {out_ty}"));
    }

    // ggml wrote these files; weft's writer must lay them out identically.
    let rewritten = GgufWriter::from_gguf(&f).and_then(|w| w.to_bytes()).map_err(|e| e.to_string())?;
    if rewritten != f.as_bytes() {
        return fail("weft's writer does not reproduce the file byte for byte".into());
    }
    Ok((op.to_string(), f.tensors().iter().map(|t| t.ty).collect()))
}

#[test]
fn every_reference_file_parses_and_round_trips() {
    let dir = reference_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("note: no ggml reference set at {} (set WEFT_GGML_REFERENCE); skipped", dir.display());
        return;
    };
    let mut paths: Vec<PathBuf> =
        entries.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.extension().is_some_and(|e| e == "gguf")).collect();
    paths.sort();
    assert!(!paths.is_empty(), "no .gguf files in {}", dir.display());

    let mut failures = Vec::new();
    let mut ops: BTreeMap<String, usize> = BTreeMap::new();
    let mut types: BTreeMap<&'static str, usize> = BTreeMap::new();
    for path in &paths {
        match check_file(path) {
            Ok((op, tys)) => {
                *ops.entry(op).or_default() += 1;
                for t in tys {
                    *types.entry(t.name()).or_default() += 1;
                }
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    let n_tensors: usize = types.values().sum();
    println!(
        "{} reference files parsed and rewritten byte for byte ({} failed), {} ops, \
         {n_tensors} tensors; types: {types:?}",
        paths.len() - failures.len(),
        failures.len(),
        ops.len()
    );
    assert!(failures.is_empty(), "{} of {} files failed:\n{}", failures.len(), paths.len(), failures.join("\n"));
    if paths.len() == 862 {
        let readme: BTreeMap<String, usize> = README_OPS.iter().map(|&(op, n)| (op.to_string(), n)).collect();
        assert_eq!(ops, readme, "files per op differ from the README's table");
    }
}
