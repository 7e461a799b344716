//! Throwing a failed call's error into JS with a `WEFT_*` code (see the crate docs).

use std::any::Any;
use std::ptr;

use napi::{sys, Error, Status};

use crate::messages::describe;

/// How a caught panic's message starts, here and wherever napi throws it itself (getters).
pub const INTERNAL_PREFIX: &str = "internal error (a bug in weft; please report it): ";

/// Replaces napi's: a panic caught at a `#[napi(catch_unwind)]` boundary, marked so that
/// `throw_into` gives it the code `WEFT_INTERNAL`.
pub fn panic_to_error(payload: Box<dyn Any + Send>) -> Error {
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into());
    Error::new(Status::GenericFailure, format!("{INTERNAL_PREFIX}{msg}"))
}

/// Replaces napi's `JsError` on the throwing path generated code takes.
pub struct JsError<S: AsRef<str> = Status>(Error<S>);

impl<S: AsRef<str>> From<Error<S>> for JsError<S> {
    fn from(e: Error<S>) -> Self {
        JsError(e)
    }
}

impl<S: AsRef<str>> JsError<S> {
    /// Throw the error into JS, coded `WEFT_*`.
    ///
    /// # Safety
    /// `env` must be the live env of the calling JS thread.
    pub unsafe fn throw_into(self, env: sys::napi_env) {
        let err = self.0;
        let status = err.status.as_ref().to_string();
        let mut pending = false;
        if unsafe { sys::napi_is_exception_pending(env, &mut pending) } != sys::Status::napi_ok {
            return;
        }
        // An exception JS code threw (a getter a conversion ran) stays as thrown; errors the
        // binding made already carry their code.
        if pending || status.starts_with("WEFT_") {
            return unsafe { napi::JsError::from(err).throw_into(env) };
        }
        let reason = err.reason.clone();
        // An error made from a JS error object (a rejected task's) keeps it if it is coded.
        let value = unsafe { napi::JsError::from(err).into_value(env) };
        if !value.is_null() && unsafe { has_weft_code(env, value) } {
            unsafe { sys::napi_throw(env, value) };
            return;
        }
        let (code, message) = describe(&status, &reason);
        if let Some(e) = unsafe { coded_error(env, code, &message) } {
            unsafe { sys::napi_throw(env, e) };
        }
    }
}

/// A new JS `Error` with `code` and `message`, or None if the env cannot make one.
///
/// # Safety
/// `env` must be the live env of the calling JS thread.
pub unsafe fn coded_error(env: sys::napi_env, code: &str, message: &str) -> Option<sys::napi_value> {
    let mut c = ptr::null_mut();
    let mut m = ptr::null_mut();
    let mut e = ptr::null_mut();
    let ok = sys::Status::napi_ok;
    unsafe {
        (sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut c) == ok
            && sys::napi_create_string_utf8(env, message.as_ptr().cast(), message.len() as isize, &mut m) == ok
            && sys::napi_create_error(env, c, m, &mut e) == ok)
            .then_some(e)
    }
}

/// Whether `value.code` is a string starting with `WEFT_`.
unsafe fn has_weft_code(env: sys::napi_env, value: sys::napi_value) -> bool {
    let ok = sys::Status::napi_ok;
    let mut is_error = false;
    if unsafe { sys::napi_is_error(env, value, &mut is_error) } != ok || !is_error {
        return false;
    }
    let mut code = ptr::null_mut();
    if unsafe { sys::napi_get_named_property(env, value, c"code".as_ptr(), &mut code) } != ok {
        // A throwing `code` getter: forget it.
        let mut ignored = ptr::null_mut();
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut ignored) };
        return false;
    }
    let mut ty = 0;
    if unsafe { sys::napi_typeof(env, code, &mut ty) } != ok || ty != sys::ValueType::napi_string {
        return false;
    }
    let mut buf = [0u8; 8];
    let mut len = 0;
    let got = unsafe { sys::napi_get_value_string_utf8(env, code, buf.as_mut_ptr().cast(), buf.len(), &mut len) };
    got == ok && len >= 5 && buf[..5] == *b"WEFT_"
}
