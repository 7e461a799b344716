//! `GgufFile`: a parsed GGUF file whose tensor data stays in a memory map (or a buffer) and
//! is handed out as borrowed slices.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::reader::{parse, Parsed};
use super::tensor::TensorInfo;
use super::value::{Array, Value};
use crate::mapped::MappedFile;
use crate::{Error, Result};

/// Typed `get_*` helpers: the value under a key, through one of `Value`'s accessors.
macro_rules! value_getters {
    ($( $(#[$doc:meta])* $name:ident -> $t:ty = $conv:ident; )*) => {$(
        $(#[$doc])*
        pub fn $name(&self, key: &str) -> Option<$t> {
            self.get(key)?.$conv()
        }
    )*};
}

/// Where the file's bytes live.
enum Bytes {
    Map(MappedFile),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m.as_slice(),
            Bytes::Owned(v) => v,
        }
    }
}

/// A GGUF file (v2 or v3), fully validated when opened: metadata and tensor infos are
/// parsed into memory; tensor data is borrowed from the file on demand.
pub struct GgufFile {
    bytes: Bytes,
    parsed: Parsed,
}

impl GgufFile {
    /// Opens and validates a GGUF file, memory-mapping it so that tensor data is read only
    /// when it is used.
    ///
    /// As with any memory-mapped file (llama.cpp maps models the same way), the file should
    /// not be modified while this value lives. If it shrinks anyway, reads of the lost
    /// pages give zeros instead of killing the process, and [`check_intact`](Self::check_intact)
    /// reports it (see `crate::mapped`).
    pub fn open(path: impl AsRef<Path>) -> Result<GgufFile> {
        let path = path.as_ref();
        let in_file = |e: Error| e.context(format_args!("gguf: {}", path.display()));
        let mut file = File::open(path).map_err(|e| in_file(e.into()))?;
        let mapped = MappedFile::map(&file).map_err(|e| in_file(e.into()))?;
        let bytes = match mapped {
            Some(map) => Bytes::Map(map),
            // Empty files cannot be mapped, and pipes or special files cannot be either:
            // read those instead.
            None => {
                let mut buf = Vec::new();
                file.read_to_end(&mut buf).map_err(|e| in_file(e.into()))?;
                Bytes::Owned(buf)
            }
        };
        let gguf = Self::from_storage(bytes).map_err(in_file)?;
        gguf.check_intact().map_err(in_file)?;
        Ok(gguf)
    }

    /// Parses a GGUF file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<GgufFile> {
        Self::from_storage(Bytes::Owned(bytes)).map_err(|e| e.context("gguf"))
    }

    /// Parses a copy of a GGUF file held in memory.
    pub fn from_slice(bytes: &[u8]) -> Result<GgufFile> {
        Self::from_bytes(bytes.to_vec())
    }

    fn from_storage(bytes: Bytes) -> Result<GgufFile> {
        let parsed = parse(bytes.as_slice())?;
        Ok(GgufFile { bytes, parsed })
    }

    /// Format version: 2 or 3.
    pub fn version(&self) -> u32 {
        self.parsed.version
    }

    /// Alignment of the data section and of every tensor offset (`general.alignment`, or 32).
    pub fn alignment(&self) -> usize {
        self.parsed.alignment
    }

    /// Offset of the data section from the start of the file.
    pub fn data_offset(&self) -> usize {
        self.parsed.data_offset
    }

    /// An error if the mapped file shrank under this value, so that what was read from it
    /// since is unreliable. Check after using [`tensor_bytes`](Self::tensor_bytes) or
    /// [`as_bytes`](Self::as_bytes); files parsed from memory are always intact.
    pub fn check_intact(&self) -> Result<()> {
        match &self.bytes {
            Bytes::Map(m) => m.check_intact().map_err(|e| e.context("gguf")),
            Bytes::Owned(_) => Ok(()),
        }
    }

    /// A copy of the named tensor's data, or None if the file has no such tensor; an
    /// error if the file shrank while it was being read.
    pub fn tensor_bytes_checked(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let Some(bytes) = self.tensor_bytes(name) else { return Ok(None) };
        let mut out = crate::backend::try_vec("gguf tensor data", bytes.len())?;
        out.copy_from_slice(bytes);
        self.check_intact()?;
        Ok(Some(out))
    }

    /// The whole file.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// Every key/value, in file order.
    pub fn metadata(&self) -> &[(String, Value)] {
        &self.parsed.metadata
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        let i = *self.parsed.key_index.get(key)?;
        Some(&self.parsed.metadata[i].1)
    }

    value_getters! {
        /// A string value.
        get_str -> &str = as_str;
        get_bool -> bool = as_bool;
        /// An integer of any integer type whose value fits in `u32` (see [`Value::as_i128`]).
        get_u32 -> u32 = to_u32;
        /// An integer of any integer type whose value fits in `i32`.
        get_i32 -> i32 = to_i32;
        /// An integer of any integer type whose value fits in `u64`.
        get_u64 -> u64 = to_u64;
        /// An integer of any integer type whose value fits in `i64`.
        get_i64 -> i64 = to_i64;
        /// An `f32` value.
        get_f32 -> f32 = to_f32;
        /// An `f32` or `f64` value, as `f64`.
        get_f64 -> f64 = to_f64;
        get_array -> &Array = as_array;
    }

    pub fn get_str_array(&self, key: &str) -> Option<&[String]> {
        self.get_array(key)?.as_str()
    }

    /// Every tensor info, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.parsed.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        Some(&self.parsed.tensors[self.tensor_index(name)?])
    }

    /// Position of the named tensor in [`tensors`](Self::tensors).
    pub fn tensor_index(&self, name: &str) -> Option<usize> {
        self.parsed.tensor_index.get(name).copied()
    }

    /// The data of the tensor with this info's name, borrowed from the file (`info.size`
    /// bytes). The layout comes from this file's own info, so an info from another file
    /// cannot point outside this one; a name this file lacks gives an empty slice.
    pub fn tensor_data(&self, info: &TensorInfo) -> &[u8] {
        self.tensor_bytes(&info.name).unwrap_or_default()
    }

    /// The data of the named tensor, borrowed from the file.
    pub fn tensor_bytes(&self, name: &str) -> Option<&[u8]> {
        let range = self.parsed.ranges[self.tensor_index(name)?].clone();
        // Validated at parse time; `get` keeps even a logic error from panicking.
        Some(self.as_bytes().get(range).unwrap_or_default())
    }
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("version", &self.version())
            .field("alignment", &self.alignment())
            .field("data_offset", &self.data_offset())
            .field("len", &self.as_bytes().len())
            .field("n_kv", &self.metadata().len())
            .field("n_tensors", &self.tensors().len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gguf::GgufWriter;
    use crate::Type;

    #[test]
    fn files_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<GgufFile>();
    }

    #[test]
    fn tensor_data_uses_this_files_own_layout() {
        let mut w = GgufWriter::new();
        w.add_tensor("a", Type::I8, &[2], vec![1, 2]).unwrap();
        let f = GgufFile::from_bytes(w.to_bytes().unwrap()).unwrap();
        let mut foreign = f.tensors()[0].clone();
        foreign.offset = u64::MAX;
        foreign.size = usize::MAX;
        assert_eq!(f.tensor_data(&foreign), [1, 2]);
        foreign.name = "missing".into();
        assert_eq!(f.tensor_data(&foreign), [0u8; 0]);
        assert_eq!(f.tensor_index("a"), Some(0));
        assert!(format!("{f:?}").contains("n_tensors: 1"));
    }
}
