//! napi, as weft's binding sees it. The binding depends on this crate under the name `napi`,
//! so the code napi-derive generates for every `#[napi]` item (which names paths like
//! `napi::bindgen_prelude::JsError`) resolves here. Everything is napi's own, re-exported,
//! except the two functions that generated code calls when a JS call fails:
//!
//! - `bindgen_prelude::JsError::throw_into`: throws the error with a `WEFT_*` code. napi's
//!   own failures (an argument of the wrong type, a missing options field, a string that is
//!   not a variant of a string enum) become `WEFT_INVALID_ARGUMENT` with a message saying
//!   what was expected; the binding's own errors keep their codes.
//! - `bindgen_prelude::panic_to_error`: a panic caught at the boundary (always a bug) becomes
//!   `WEFT_INTERNAL`, so tests and fuzzers can count it.
//!
//! Being a separate crate is what makes this apply to every file of the binding, including
//! methods added later, without a line in them.

pub use napi::*;

mod enums;
mod messages;
mod panics;
mod throw;

pub use enums::register_string_enum;
pub use messages::describe;
pub use panics::{count_panics, panic_count};
pub use throw::{coded_error, INTERNAL_PREFIX};

/// napi's prelude with the throwing path replaced (see the crate docs).
pub mod bindgen_prelude {
    pub use crate::throw::{panic_to_error, JsError};
    pub use napi::bindgen_prelude::*;
}
