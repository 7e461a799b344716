//! Arguments napi cannot check for us. JS has one number type: napi's integer conversions
//! truncate 2.5 to 2, NaN to 0 and wrap 2^32 + 1 to 1. So integer parameters are declared
//! `f64` (the `.d.ts` still says `number`, and a non-number is refused by napi, which
//! weft-napi codes WEFT_INVALID_ARGUMENT) and converted here with the method and parameter
//! named: `int::<i64>("newTensor2d: ne1", ne1)?`. Type errors, unknown enum strings and
//! caught panics need nothing here: weft-napi codes them wherever they happen.

use napi::bindgen_prelude::Unknown;
use napi::ValueType;

use crate::error::{invalid, IntoJs, Result};

/// Largest integer a JS number holds exactly (Number.MAX_SAFE_INTEGER).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// Integer types a JS number converts to, with their range for error messages.
pub trait JsInt: TryFrom<i64> {
    const RANGE: &'static str;
}

macro_rules! js_int {
    ($($t:ty),*) => {$(
        impl JsInt for $t {
            const RANGE: &'static str = concat!(stringify!($t), "'s range");
        }
    )*};
}
js_int!(u8, u32, i32, i64, usize);

/// A number as JS prints it (NaN, Infinity, 1e+300), for error messages.
pub fn js_number(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".into(),
        v if v.is_infinite() => if v > 0.0 { "Infinity" } else { "-Infinity" }.into(),
        v if v != 0.0 && (v.abs() >= 1e21 || v.abs() < 1e-6) => {
            format!("{v:e}").replace('e', "e+").replace("e+-", "e-")
        }
        v => format!("{v}"),
    }
}

/// A JS number as an integer of type `T`: finite, whole, and in `T`'s range.
pub fn int<T: JsInt>(what: &str, v: f64) -> Result<T> {
    let shown = || js_number(v);
    if !v.is_finite() || v.fract() != 0.0 {
        return Err(invalid(format!("{what}={} must be an integer", shown())));
    }
    if v.abs() > MAX_SAFE {
        return Err(invalid(format!("{what}={} is beyond the integers a JS number holds exactly (2^53 - 1)", shown())));
    }
    T::try_from(v as i64).map_err(|_| invalid(format!("{what}={} is outside {}", shown(), T::RANGE)))
}

/// int() for an optional argument, `default` when absent.
pub fn int_or<T: JsInt>(what: &str, v: Option<f64>, default: T) -> Result<T> {
    v.map_or(Ok(default), |v| int(what, v))
}

/// A size, count or byte offset: a non-negative integer.
pub fn uint(what: &str, v: f64) -> Result<usize> {
    if v < 0.0 {
        return Err(invalid(format!("{what}={} must not be negative", js_number(v))));
    }
    int(what, v)
}

/// Dimensions given as an array (ne[0] first).
pub fn dims(what: &str, v: &[f64]) -> Result<Vec<i64>> {
    v.iter().enumerate().map(|(i, &x)| int(&format!("{what}[{i}]"), x)).collect()
}

/// An options object the method cannot do without (napi(object) parameters are declared
/// `Option<T>`, typed as required in the .d.ts, so that `undefined` reaches this check
/// instead of failing inside napi with a V8 TypeError).
pub fn required<T>(what: &str, v: Option<T>) -> Result<T> {
    v.ok_or_else(|| invalid(format!("{what} is required (an options object)")))
}

/// A setter's value: setters convert their own (napi's failure there is not coded),
/// declared `Unknown` with the real type in `ts_arg_type`.
pub fn boolean(what: &str, v: &Unknown) -> Result<bool> {
    match v.get_type().js()? {
        ValueType::Boolean => unsafe { v.cast::<bool>() }.js(),
        other => Err(invalid(format!("{what}: expected a boolean, got {}", kind(other)))),
    }
}

/// A setter's string value (see `boolean`).
pub fn string(what: &str, v: &Unknown) -> Result<String> {
    match v.get_type().js()? {
        ValueType::String => unsafe { v.cast::<String>() }.js(),
        other => Err(invalid(format!("{what}: expected a string, got {}", kind(other)))),
    }
}

/// Whether a JS value is undefined or null: an optional argument or option left out.
pub fn is_nullish(v: &Unknown) -> Result<bool> {
    Ok(matches!(v.get_type().js()?, ValueType::Undefined | ValueType::Null))
}

/// An optional argument as given: None when absent, undefined or null.
pub fn present(v: Option<Unknown>) -> Result<Option<Unknown>> {
    match v {
        Some(v) if !is_nullish(&v)? => Ok(Some(v)),
        _ => Ok(None),
    }
}

/// An optional number argument of an async method, which converts its own arguments so
/// that a wrong one rejects its Promise (undefined or null: None). `int`/`uint` check it.
pub fn opt_number(what: &str, v: Option<Unknown>) -> Result<Option<f64>> {
    let Some(v) = present(v)? else { return Ok(None) };
    match v.get_type().js()? {
        // SAFETY: checked to be a number
        ValueType::Number => Ok(Some(unsafe { v.cast::<f64>() }.js()?)),
        other => Err(invalid(format!("{what} must be a number, got {}", kind(other)))),
    }
}

fn kind(t: ValueType) -> String {
    format!("{t:?}").to_lowercase()
}
