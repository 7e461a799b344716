//! Module-level quantization functions: ggml_quantize_chunk and its helpers over JS typed
//! arrays. Each checks what ggml leaves to the caller (the chunk's start, the arrays'
//! lengths, the importance matrix) with an error naming the function, the type and the
//! condition, then calls the engine's quant module.

use napi::bindgen_prelude::{Float32Array, Uint8Array};

use crate::args::uint;
use crate::enums::GgmlType;
use crate::error::{invalid, js_err, IntoJs, JsError, Result};
use weft::types::quant;

/// An engine error raised inside JS function `what`, its message prefixed with the name.
fn in_fn(what: &str, e: weft::Error) -> JsError {
    js_err(weft::Error { message: format!("{what}: {}", e.message), ..e })
}

/// The bytes of `nrows` rows of `n_per_row` elements of `t`, or an error if a row is not
/// whole blocks or the size overflows.
fn rows_size(what: &str, t: weft::Type, nrows: usize, n_per_row: usize) -> Result<usize> {
    i64::try_from(n_per_row).ok().and_then(|n| t.row_size_checked(n)).and_then(|r| r.checked_mul(nrows)).ok_or_else(
        || {
            invalid(format!(
                "{what}: {t}: {nrows} rows of {n_per_row} elements are not whole blocks of {} elements, or too many",
                t.blck_size()
            ))
        },
    )
}

/// ggml_quantize_chunk over the floats `src[start..start + nrows * n_per_row]`.
fn chunk(
    what: &str,
    t: weft::Type,
    src: &[f32],
    start: usize,
    nrows: usize,
    n_per_row: usize,
    imatrix: Option<&[f32]>,
) -> Result<Uint8Array> {
    if n_per_row == 0 {
        return Err(invalid(format!("{what}: {t}: nPerRow (ncols) must be positive")));
    }
    if !start.is_multiple_of(n_per_row) {
        return Err(invalid(format!("{what}: {t}: start={start} must be a multiple of nPerRow={n_per_row}")));
    }
    let size = rows_size(what, t, nrows, n_per_row)?;
    let end = nrows.checked_mul(n_per_row).and_then(|n| n.checked_add(start));
    let Some(rows) = end.and_then(|end| src.get(start..end)) else {
        return Err(invalid(format!(
            "{what}: {t}: start + nrows * nPerRow = {start} + {nrows} * {n_per_row} is past the end of the {} floats",
            src.len()
        )));
    };
    match imatrix {
        None if quant::requires_imatrix(t) => {
            return Err(invalid(format!(
                "{what}: {t} requires an importance matrix (imatrix: one weight per column, nPerRow={n_per_row})"
            )));
        }
        Some(w) if w.len() != n_per_row => {
            return Err(invalid(format!(
                "{what}: {t}: imatrix has {} weights, expected one per column (nPerRow={n_per_row})",
                w.len()
            )));
        }
        _ => {}
    }
    let mut out = vec![0u8; size];
    quant::quantize_chunk(t, rows, &mut out, nrows, n_per_row, imatrix).map_err(|e| in_fn(what, e))?;
    Ok(Uint8Array::new(out))
}

/// ggml_quantize_chunk: quantizes `nrows` rows of `nPerRow` floats of `src` from element
/// `start` (a multiple of nPerRow, as ggml asserts) and returns their bytes, which ggml
/// writes at row start / nPerRow of its destination. `imatrix` holds importance weights, one
/// per column (exactly nPerRow); iq2_xxs, iq2_xs and iq1_s require it (requiresImatrix),
/// other types use it where their quantizer does.
#[napi(catch_unwind)]
pub fn quantize_chunk(
    ty: GgmlType,
    src: Float32Array,
    start: f64,
    nrows: f64,
    n_per_row: f64,
    imatrix: Option<Float32Array>,
) -> Result<Uint8Array> {
    chunk(
        "quantizeChunk",
        ty.to_engine()?,
        &src,
        uint("quantizeChunk: start", start)?,
        uint("quantizeChunk: nrows", nrows)?,
        uint("quantizeChunk: nPerRow", n_per_row)?,
        imatrix.as_deref(),
    )
}

/// Quantizes a matrix of `nrows` rows of `ncols` floats (data.length = nrows * ncols) as
/// ggml_quantize_chunk does; `imatrix` as there (ncols weights).
#[napi(catch_unwind)]
pub fn quantize(
    ty: GgmlType,
    data: Float32Array,
    nrows: f64,
    ncols: f64,
    imatrix: Option<Float32Array>,
) -> Result<Uint8Array> {
    let t = ty.to_engine()?;
    let (r, c) = (uint("quantize: nrows", nrows)?, uint("quantize: ncols", ncols)?);
    if r.checked_mul(c) != Some(data.len()) {
        return Err(invalid(format!(
            "quantize: {t}: data has {} floats, expected nrows * ncols = {r} * {c}",
            data.len()
        )));
    }
    if r == 0 {
        return Ok(Uint8Array::new(Vec::new()));
    }
    chunk("quantize", t, &data, 0, r, c, imatrix.as_deref())
}

/// dequantize_row: the `n` elements of `type` in `bytes` (exactly their size) as f32; f32,
/// f16 and bf16 convert too.
#[napi(catch_unwind)]
pub fn dequantize(ty: GgmlType, bytes: Uint8Array, n: f64) -> Result<Float32Array> {
    let t = ty.to_engine()?;
    let n = uint("dequantize: n", n)?;
    let size = rows_size("dequantize", t, 1, n)?;
    if bytes.len() != size {
        return Err(invalid(format!("dequantize: {t}: {n} elements take {size} bytes, but bytes has {}", bytes.len())));
    }
    let mut out = vec![0f32; n];
    quant::dequantize_row(t, &bytes, &mut out).map_err(|e| in_fn("dequantize", e))?;
    Ok(Float32Array::new(out))
}

/// ggml_quantize_requires_imatrix: whether quantizing `type` needs importance weights.
#[napi(catch_unwind)]
pub fn requires_imatrix(ty: GgmlType) -> Result<bool> {
    Ok(quant::requires_imatrix(ty.to_engine()?))
}

/// ggml_validate_row_data: throws if `bytes` are not whole blocks of `type` or hold a
/// non-finite scale (quantized types) or value (float types); the message says which.
#[napi(catch_unwind)]
pub fn validate_row_data(ty: GgmlType, bytes: Uint8Array) -> Result<()> {
    quant::validate_row_data(ty.to_engine()?, &bytes).js()
}
