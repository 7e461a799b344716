//! One error type for the whole engine. Every condition ggml asserts becomes an `Error`
//! whose message names the op (in the JS spelling, e.g. `mulMat`), the tensors and the
//! condition broken; the binding maps `kind` to a JS error `code`.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Arguments break a rule ggml asserts (shapes, types, params).
    InvalidArgument,
    /// A context's memory pool, a buffer or a graph is full.
    OutOfMemory,
    /// The backend has no kernel for this op / type combination.
    NotSupported,
    /// weft does not implement this yet.
    NotImplemented,
    /// A backend or device failed (driver error, lost device, validation error).
    Backend,
    /// A file or byte stream is malformed.
    Format,
    /// I/O failed.
    Io,
    /// The object is in use by a running compute.
    Busy,
    /// A compute was stopped by its caller (ggml's abort callback; JS AbortSignal).
    Aborted,
    /// A bug in weft (a caught panic, a broken invariant): never the caller's doing.
    Internal,
}

impl ErrorKind {
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "WEFT_INVALID_ARGUMENT",
            ErrorKind::OutOfMemory => "WEFT_OUT_OF_MEMORY",
            ErrorKind::NotSupported => "WEFT_NOT_SUPPORTED",
            ErrorKind::NotImplemented => "WEFT_NOT_IMPLEMENTED",
            ErrorKind::Backend => "WEFT_BACKEND",
            ErrorKind::Format => "WEFT_FORMAT",
            ErrorKind::Io => "WEFT_IO",
            ErrorKind::Busy => "WEFT_BUSY",
            ErrorKind::Aborted => "WEFT_ABORTED",
            ErrorKind::Internal => "WEFT_INTERNAL",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }
    pub fn oom(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfMemory, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotSupported, message)
    }
    pub fn unimplemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, message)
    }
    pub fn backend(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Backend, message)
    }
    pub fn format(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Format, message)
    }
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }
    pub fn aborted(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Aborted, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }
    /// Prefix the message with context (`"gguf: " + message`), keeping the kind.
    pub fn context(self, prefix: impl fmt::Display) -> Self {
        Error { kind: self.kind, message: format!("{prefix}: {}", self.message) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::new(ErrorKind::Io, e.to_string())
    }
}

/// `ensure!(cond, "mulMat: a.ne[0]={} must equal b.ne[0]={}", x, y)`: return an
/// InvalidArgument error unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        let holds: bool = $cond;
        if !holds {
            return Err($crate::Error::invalid(format!($($fmt)+)));
        }
    };
}

/// `bail!("...")`: return an InvalidArgument error.
#[macro_export]
macro_rules! bail {
    ($($fmt:tt)+) => {
        return Err($crate::Error::invalid(format!($($fmt)+)))
    };
}
