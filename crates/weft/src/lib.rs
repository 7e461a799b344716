//! weft: ggml's tensor engine in Rust. See ARCHITECTURE.md for the map.

pub mod alloc;
pub mod backend;
pub mod context;
pub mod error;
pub mod gguf;
pub mod graph;
pub mod mapped;
pub mod op;
pub mod tensor;
pub mod types;

pub use context::{Context, ContextParams};
pub use error::{Error, ErrorKind, Result};
pub use graph::Graph;
pub use op::{Op, OpKind};
pub use tensor::Tensor;
pub use types::Type;
