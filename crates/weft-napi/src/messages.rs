//! napi's own error messages (conversions that failed before the binding's code ran) read as
//! what the caller should have passed: "expected a number, got a string".

use crate::enums::values_of;

/// `WEFT_*` code and message for an error napi produced with `status` and `reason`.
pub fn describe(status: &str, reason: &str) -> (&'static str, String) {
    if let Some(rest) = reason.strip_prefix(crate::INTERNAL_PREFIX) {
        return ("WEFT_INTERNAL", format!("{}{rest}", crate::INTERNAL_PREFIX));
    }
    // napi refuses `&mut self` (dispose ...) on an object a pending Promise still borrows.
    if reason.contains("cannot be borrowed mutably while another borrow is active") {
        return (
            "WEFT_BUSY",
            "this object is in use by a pending call (compute, compareGraph, getAsync, toFloat32Async); await it first"
                .into(),
        );
    }
    match argument_message(reason) {
        Some(m) => ("WEFT_INVALID_ARGUMENT", m),
        // An `...Expected` or `InvalidArg` status is always about a value passed in.
        None if status == "InvalidArg" || status.ends_with("Expected") => {
            ("WEFT_INVALID_ARGUMENT", format!("invalid argument: {reason}"))
        }
        // Anything else is napi failing on its own: not the caller's doing.
        None => ("WEFT_INTERNAL", format!("{}napi: {status}: {reason}", crate::INTERNAL_PREFIX)),
    }
}

/// The text between the first `open` and the next `close` after it.
fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let len = s[start..].find(close)?;
    Some(&s[start..start + len])
}

/// "a string", "undefined", "an object" for napi's value-type names ("String", "Undefined").
fn js_kind(napi_kind: &str) -> String {
    let k = napi_kind.split_whitespace().next().unwrap_or(napi_kind).to_ascii_lowercase();
    match k.as_str() {
        "undefined" | "null" => k,
        "object" | "external" => format!("an {k}"),
        "bigint" => "a bigint".into(),
        _ => format!("a {k}"),
    }
}

/// What JS value a Rust type napi converts into stands for.
fn js_type_of(rust: &str) -> String {
    match rust {
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "f32" | "f64" => "a number".into(),
        "u64" | "i64n" | "i128" | "u128" | "BigInt" => "a bigint".into(),
        "String" | "&str" => "a string".into(),
        "bool" => "a boolean".into(),
        other if other.starts_with("Vec") || other.starts_with("Array") => "an array".into(),
        "Object" => "an object".into(),
        other => format!("a {other}"),
    }
}

/// " on AdamwOptions.alpha" napi appends when converting an options object's field.
fn field_prefix(reason: &str) -> String {
    match reason.rsplit_once(" on ") {
        Some((_, field)) if !field.contains(' ') => format!("{field}: "),
        _ => String::new(),
    }
}

fn enum_expectation(name: &str) -> String {
    match values_of(name) {
        Some(v) => format!("one of {v}"),
        None => format!("a {name} string"),
    }
}

fn argument_message(reason: &str) -> Option<String> {
    // A string that names no variant of a string enum.
    if reason.starts_with("value `") && reason.contains("does not match any variant of enum") {
        let value = between(reason, "value `", "` does not")?;
        let name = between(reason, "of enum `", "`")?;
        let value = value.trim_matches('"');
        return Some(format!("'{value}' is not a {name}: expected {}", enum_expectation(name)));
    }
    // A value that is not a string where a string enum is expected.
    if let Some(name) = between(reason, "Failed to convert napi value into enum `", "`") {
        let got = between(reason, "JavaScript value `", "`").map(js_kind).unwrap_or_else(|| "another value".into());
        return Some(format!("expected a {name} ({}), got {got}", enum_expectation(name)));
    }
    // A value that is not an instance of the class expected.
    for open in [
        "Failed to recover `",
        "Failed to unwrap exclusive reference of `",
        "Failed to unwrap value of `",
        "Value is not an instance of class `",
    ] {
        if let Some(class) = between(reason, open, "`") {
            return Some(format!("expected a {class} (an object weft created), got another value"));
        }
    }
    // Numbers, booleans: "Failed to convert napi value String into rust type `i64`".
    if let Some(rest) = reason.strip_prefix("Failed to convert napi value ") {
        let kind = rest.split_whitespace().next()?;
        let rust = between(rest, "rust type `", "`")?;
        return Some(format!("{}expected {}, got {}", field_prefix(reason), js_type_of(rust), js_kind(kind)));
    }
    // Strings: "Failed to convert JavaScript value `Number 5 ` into rust type `String`".
    if let Some(kind) = between(reason, "Failed to convert JavaScript value `", "`") {
        let rust = between(reason, "rust type `", "`").unwrap_or("String");
        return Some(format!("{}expected {}, got {}", field_prefix(reason), js_type_of(rust), js_kind(kind)));
    }
    if let Some(field) = between(reason, "Missing field `", "`") {
        return Some(format!("the options object lacks required field '{field}'"));
    }
    if let Some(rest) = reason.strip_prefix("Expect value to be ") {
        let (want, got) = rest.split_once(", but received ")?;
        return Some(format!("{}expected {}, got {}", field_prefix(reason), js_type_of(want), js_kind(got)));
    }
    if reason.starts_with("Failed to get Array length") {
        return Some("expected an array".into());
    }
    if reason.contains("TypedArray info")
        || reason.contains("typedarray info")
        || reason.contains("reference from TypedArray")
    {
        return Some("expected a typed array (Float32Array, Uint8Array, Buffer ...)".into());
    }
    // Integer narrowing: "Failed to convert u32 to u8".
    if let Some(rest) = reason.strip_prefix("Failed to convert ") {
        if let Some((_, to)) = rest.split_once(" to ") {
            return Some(format!("expected a number that fits {to}"));
        }
    }
    None
}
