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
        // The JS value of the error: the one it was made from, or a fresh one coded with
        // the status (napi's own failures).
        let value = unsafe { napi::JsError::from(err).into_value(env) };
        if value.is_null() {
            return;
        }
        let code = unsafe { string_property(env, value, c"code") };
        if code.as_deref().is_some_and(|c| c.starts_with("WEFT_")) {
            // Made by the binding (a rejected task's error): already coded.
            unsafe { sys::napi_throw(env, value) };
            return;
        }
        let (code, message, cause) = if code.as_deref() == Some(status.as_str()) {
            let (c, m) = describe(&status, &reason);
            (c, m, None)
        } else {
            // An exception JS code threw while napi converted an argument (a getter, a
            // Proxy trap, toJSON or a cyclic object while napi described a value of the
            // wrong type): the argument is at fault; the exception is the cause.
            ("WEFT_INVALID_ARGUMENT", format!("invalid argument: converting it threw: {reason}"), Some(value))
        };
        if let Some(e) = unsafe { coded_error(env, code, &message) } {
            if let Some(c) = cause {
                unsafe { sys::napi_set_named_property(env, e, c"cause".as_ptr(), c) };
            }
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

/// `value[name]` if it is a string (short ones: codes), else None.
unsafe fn string_property(env: sys::napi_env, value: sys::napi_value, name: &std::ffi::CStr) -> Option<String> {
    let ok = sys::Status::napi_ok;
    let mut is_error = false;
    if unsafe { sys::napi_is_error(env, value, &mut is_error) } != ok || !is_error {
        return None;
    }
    let mut prop = ptr::null_mut();
    if unsafe { sys::napi_get_named_property(env, value, name.as_ptr(), &mut prop) } != ok {
        // A throwing getter: forget it.
        let mut ignored = ptr::null_mut();
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut ignored) };
        return None;
    }
    let mut ty = 0;
    if unsafe { sys::napi_typeof(env, prop, &mut ty) } != ok || ty != sys::ValueType::napi_string {
        return None;
    }
    let mut buf = [0u8; 64];
    let mut len = 0;
    let got = unsafe { sys::napi_get_value_string_utf8(env, prop, buf.as_mut_ptr().cast(), buf.len(), &mut len) };
    (got == ok).then(|| String::from_utf8_lossy(&buf[..len]).into_owned())
}
