//! weft: ggml's tensor engine in Rust. See ARCHITECTURE.md for the map.

pub mod error;
pub mod types;

pub use error::{Error, ErrorKind, Result};
pub use types::Type;
