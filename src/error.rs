//! The one mapping from engine errors to JS errors: the message is the engine's (it names
//! the op, the tensors and the condition), `code` is the kind (WEFT_INVALID_ARGUMENT ...).

/// Errors thrown to JS carry a string code.
pub type JsError = napi::Error<String>;
/// Named `Result` because napi-derive recognises fallible methods by that name.
pub type Result<T> = std::result::Result<T, JsError>;

pub fn js_err(e: weft::Error) -> JsError {
    JsError::new(e.kind.code().to_string(), e.message)
}

/// napi's own errors (value conversions the binding asks for) under the same scheme as
/// those napi meets before a method runs (weft-napi's `describe`).
pub fn napi_err(e: napi::Error) -> JsError {
    let (code, message) = napi::describe(e.status.as_ref(), &e.reason);
    JsError::new(code.to_string(), message)
}

/// `.js()` on engine and napi results inside binding code.
pub trait IntoJs<T> {
    fn js(self) -> Result<T>;
}

impl<T> IntoJs<T> for weft::Result<T> {
    fn js(self) -> Result<T> {
        self.map_err(js_err)
    }
}

impl<T> IntoJs<T> for napi::Result<T> {
    fn js(self) -> Result<T> {
        self.map_err(napi_err)
    }
}

pub fn invalid(msg: impl Into<String>) -> JsError {
    js_err(weft::Error::invalid(msg.into()))
}

/// Using an object after dispose() is an Error naming the class.
pub fn disposed(class: &str) -> JsError {
    invalid(format!("{class} has been disposed"))
}

/// `new Tensor()` and the like: classes whose objects only weft creates.
pub fn not_constructible(class: &str, made_by: &str) -> JsError {
    invalid(format!("new {class}() is not supported: {class} objects are made by {made_by}"))
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
