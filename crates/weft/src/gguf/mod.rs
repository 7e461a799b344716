//! GGUF, ggml's model file format: read (v2 and v3, memory-mapped, validated against
//! truncated and hostile input) and write (v3).
//!
//! Reading: [`GgufFile::open`] / [`GgufFile::from_bytes`], then [`GgufFile::metadata`] and
//! the typed `get_*` helpers for key/values, [`GgufFile::tensors`] for tensor infos and
//! [`GgufFile::tensor_data`] for their bytes, borrowed from the map.
//! Writing: [`GgufWriter`].
//!
//! The format is ggml's (`gguf_init_from_file_impl` / `gguf_write_to_buf`). Beyond ggml,
//! weft reads arrays of arrays (gguf-py writes them), to a nesting depth of
//! [`MAX_ARRAY_DEPTH`].

mod file;
mod load;
mod reader;
mod tensor;
mod value;
mod wire;
mod writer;

pub use file::GgufFile;
pub use load::{add_tensor_from, create_tensors, load_tensors};
pub use tensor::TensorInfo;
pub use value::{Array, Value, ValueType};
pub use writer::GgufWriter;

/// The 4 bytes every GGUF file starts with.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// The version the writer writes.
pub const VERSION: u32 = 3;
/// Alignment of the data section and tensor offsets when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: usize = 32;
/// The key that sets a file's alignment (a u32 power of two).
pub const ALIGNMENT_KEY: &str = "general.alignment";
/// The largest alignment the writer writes with: 64 KiB, the largest page size systems use
/// (all that mapping tensors in place could need). Readers accept any power of two, as
/// ggml's does; writing with 2^31 would pad every tensor to 2 GiB.
pub const MAX_WRITE_ALIGNMENT: usize = 1 << 16;
/// Most dimensions a tensor has (`GGML_MAX_DIMS`), and longest tensor name plus one
/// (`GGML_MAX_NAME`): the engine's own limits, which GGUF files must keep to.
pub use crate::tensor::{MAX_DIMS, MAX_NAME};
/// How deep arrays of arrays may nest; deeper files are refused so that parsing a hostile
/// file cannot overflow the stack.
pub const MAX_ARRAY_DEPTH: usize = 32;
