//! `GgufWriter`: builds a GGUF v3 file from metadata and tensors, laid out as ggml's
//! `gguf_write_to_buf` lays it out (tensors in insertion order, each padded to the
//! alignment), so a file read and written back comes out byte for byte the same.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::file::GgufFile;
use super::reader::alignment_from;
use super::tensor::{check_name, data_size, TensorInfo};
use super::value::{Array, Value};
use super::wire::{put_string, Le};
use super::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, MAGIC, MAX_ARRAY_DEPTH, MAX_DIMS, MAX_WRITE_ALIGNMENT, VERSION};
use crate::{ensure, Error, Result, Type};

/// A tensor waiting to be written: its info (offset filled in at write time) and its data,
/// borrowed where the caller can lend it.
struct Pending<'a> {
    info: TensorInfo,
    data: Cow<'a, [u8]>,
}

/// Collects metadata and tensors, then writes them as one GGUF v3 file.
///
/// ```
/// # use weft::{gguf::{GgufFile, GgufWriter}, Type};
/// let mut w = GgufWriter::new();
/// w.set("general.name", "tiny")?;
/// w.add_tensor("x", Type::F32, &[2], 1.5f32.to_le_bytes().repeat(2))?;
/// let file = GgufFile::from_bytes(w.to_bytes()?)?;
/// assert_eq!(file.get_str("general.name"), Some("tiny"));
/// # Ok::<(), weft::Error>(())
/// ```
#[derive(Default)]
pub struct GgufWriter<'a> {
    metadata: Vec<(String, Value)>,
    key_index: HashMap<String, usize>,
    tensors: Vec<Pending<'a>>,
    tensor_index: HashMap<String, usize>,
}

impl<'a> GgufWriter<'a> {
    pub fn new() -> Self {
        Self::default()
    }

    /// A writer holding everything `file` holds, its tensor data borrowed: writing it gives
    /// the file back (re-laid out the way ggml lays files out).
    pub fn from_gguf(file: &'a GgufFile) -> Result<Self> {
        let mut w = GgufWriter::new();
        for (key, value) in file.metadata() {
            w.set(key.clone(), value.clone())?;
        }
        for t in file.tensors() {
            w.add_tensor(t.name.clone(), t.ty, t.shape(), file.tensor_data(t))?;
        }
        Ok(w)
    }

    /// Sets a key, replacing its value if it is already set (the key keeps its place), as
    /// ggml's `gguf_set_val_*` do. `general.alignment` must be a nonzero power-of-two u32:
    /// it sets the alignment the file is written with.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<Value>) -> Result<()> {
        let (key, value) = (key.into(), value.into());
        if key == ALIGNMENT_KEY {
            let a = alignment_from(&value).map_err(|m| Error::invalid(format!("gguf writer: {m}")))?;
            ensure!(
                a <= MAX_WRITE_ALIGNMENT,
                "gguf writer: {ALIGNMENT_KEY}={a} is larger than {MAX_WRITE_ALIGNMENT} (64 KiB); the writer pads every tensor to it"
            );
        }
        if let Value::Array(a) = &value {
            ensure!(
                a.depth() <= MAX_ARRAY_DEPTH,
                "gguf writer: key '{key}': arrays nest {} deep (at most {MAX_ARRAY_DEPTH})",
                a.depth()
            );
        }
        match self.key_index.get(&key) {
            Some(&i) => self.metadata[i].1 = value,
            None => {
                self.key_index.insert(key.clone(), self.metadata.len());
                self.metadata.push((key, value));
            }
        }
        Ok(())
    }

    /// Removes a key, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let i = self.key_index.remove(key)?;
        let (_, value) = self.metadata.remove(i);
        for slot in self.key_index.values_mut() {
            if *slot > i {
                *slot -= 1;
            }
        }
        Some(value)
    }

    /// Sets `general.alignment`.
    pub fn set_alignment(&mut self, alignment: u32) -> Result<()> {
        self.set(ALIGNMENT_KEY, alignment)
    }

    /// The alignment the file will be written with.
    pub fn alignment(&self) -> usize {
        self.get(ALIGNMENT_KEY).and_then(|v| alignment_from(v).ok()).unwrap_or(DEFAULT_ALIGNMENT)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        Some(&self.metadata[*self.key_index.get(key)?].1)
    }

    pub fn metadata(&self) -> &[(String, Value)] {
        &self.metadata
    }

    /// Adds a tensor of type `ty` and shape `ne` (`ne[0]` first, at most 4 dims; the file
    /// lists exactly these dims, so pass ggml's trimmed shape to match ggml's files).
    /// `data` is the contiguous tensor data, exactly `ggml_nbytes` long.
    pub fn add_tensor(
        &mut self,
        name: impl Into<String>,
        ty: Type,
        ne: &[i64],
        data: impl Into<Cow<'a, [u8]>>,
    ) -> Result<()> {
        let (name, data) = (name.into(), data.into());
        check_name(&name).map_err(|m| Error::invalid(format!("gguf writer: tensor '{name}': {m}")))?;
        let size = data_size(ty, ne).map_err(|m| Error::invalid(format!("gguf writer: tensor '{name}': {ty} {m}")))?;
        ensure!(
            data.len() == size,
            "gguf writer: tensor '{name}': {ty} {ne:?} needs {size} bytes of data, got {}",
            data.len()
        );
        ensure!(!self.tensor_index.contains_key(&name), "gguf writer: duplicate tensor name '{name}'");
        let mut padded = [1i64; MAX_DIMS];
        padded[..ne.len()].copy_from_slice(ne);
        let info = TensorInfo { name, ty, n_dims: ne.len(), ne: padded, offset: 0, size };
        self.tensor_index.insert(info.name.clone(), self.tensors.len());
        self.tensors.push(Pending { info, data });
        Ok(())
    }

    /// The tensor infos as they will be written, offsets included.
    pub fn tensors(&self) -> Vec<TensorInfo> {
        let align = self.alignment();
        let mut offset = 0u64;
        self.tensors
            .iter()
            .map(|t| {
                let info = TensorInfo { offset, ..t.info.clone() };
                offset += t.info.size as u64 + padding(t.info.size, align) as u64;
                info
            })
            .collect()
    }

    /// Header, metadata, tensor infos and the padding up to the data section: everything
    /// before the tensor data (ggml's `gguf_get_meta_data`).
    pub fn meta_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        VERSION.put(&mut out);
        (self.tensors.len() as u64).put(&mut out);
        (self.metadata.len() as u64).put(&mut out);
        for (key, value) in &self.metadata {
            put_string(&mut out, key);
            value.value_type().id().put(&mut out);
            put_value(&mut out, value);
        }
        for info in self.tensors() {
            put_string(&mut out, &info.name);
            (info.n_dims as u32).put(&mut out);
            for &n in info.shape() {
                (n as u64).put(&mut out);
            }
            info.ty.id().put(&mut out);
            info.offset.put(&mut out);
        }
        out.resize(out.len() + padding(out.len(), self.alignment()), 0);
        out
    }

    /// Writes the file to `w`. Tensor data is streamed from where it lies, not copied into
    /// one buffer first.
    pub fn write_to<W: Write>(&self, w: &mut W) -> Result<()> {
        w.write_all(&self.meta_bytes())?;
        let align = self.alignment();
        for t in &self.tensors {
            w.write_all(&t.data)?;
            write_zeros(w, padding(t.data.len(), align))?;
        }
        Ok(())
    }

    /// Writes the file to `path` (created or truncated).
    pub fn write_to_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let in_file = |e: std::io::Error| Error::from(e).context(format_args!("gguf writer: {}", path.display()));
        let mut w = BufWriter::new(File::create(path).map_err(in_file)?);
        self.write_to(&mut w)?;
        w.flush().map_err(in_file)
    }

    /// The whole file in memory.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }
}

/// Zero bytes that follow `n` bytes to reach the next multiple of `align` (ggml's
/// `GGML_PAD(n, align) - n`, computed so it cannot overflow).
fn padding(n: usize, align: usize) -> usize {
    (align - n % align) % align
}

fn write_zeros<W: Write>(w: &mut W, mut n: usize) -> Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    while n > 0 {
        let chunk = n.min(ZEROS.len());
        w.write_all(&ZEROS[..chunk])?;
        n -= chunk;
    }
    Ok(())
}

/// A value's encoding after its type id.
fn put_value(out: &mut Vec<u8>, value: &Value) {
    match *value {
        Value::U8(x) => x.put(out),
        Value::I8(x) => x.put(out),
        Value::U16(x) => x.put(out),
        Value::I16(x) => x.put(out),
        Value::U32(x) => x.put(out),
        Value::I32(x) => x.put(out),
        Value::F32(x) => x.put(out),
        Value::Bool(x) => u8::from(x).put(out),
        Value::String(ref s) => put_string(out, s),
        Value::Array(ref a) => put_array(out, a),
        Value::U64(x) => x.put(out),
        Value::I64(x) => x.put(out),
        Value::F64(x) => x.put(out),
    }
}

/// An array: element type id, u64 length, elements (an inner array repeats all three).
fn put_array(out: &mut Vec<u8>, array: &Array) {
    fn put_all<T: Le>(out: &mut Vec<u8>, v: &[T]) {
        v.iter().for_each(|x| x.put(out));
    }
    array.element_type().id().put(out);
    (array.len() as u64).put(out);
    match array {
        Array::U8(v) => out.extend_from_slice(v),
        Array::I8(v) => put_all(out, v),
        Array::U16(v) => put_all(out, v),
        Array::I16(v) => put_all(out, v),
        Array::U32(v) => put_all(out, v),
        Array::I32(v) => put_all(out, v),
        Array::F32(v) => put_all(out, v),
        Array::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
        Array::String(v) => v.iter().for_each(|s| put_string(out, s)),
        Array::Array(v) => v.iter().for_each(|a| put_array(out, a)),
        Array::U64(v) => put_all(out, v),
        Array::I64(v) => put_all(out, v),
        Array::F64(v) => put_all(out, v),
    }
}
