//! JS classes Gguf (a GGUF file opened for reading, memory-mapped) and GgufWriter. How
//! metadata values map to and from JS: gguf_values.rs.

use napi::bindgen_prelude::{Uint8Array, Unknown};
use napi::Env;
use weft::gguf::{GgufFile, ValueType};

use crate::args::{dims, int};
use crate::context::Context;
use crate::enums::GgmlType;
use crate::error::{disposed, invalid, not_constructible, IntoJs, Result};
use crate::gguf_values::{js_to_value, value_to_js};
use crate::memory::External;
use crate::tensor::Tensor;

/// A GGUF metadata value type, by ggml's gguf_type_name.
#[napi(string_enum)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GgufValueType {
    #[napi(value = "u8")]
    U8,
    #[napi(value = "i8")]
    I8,
    #[napi(value = "u16")]
    U16,
    #[napi(value = "i16")]
    I16,
    #[napi(value = "u32")]
    U32,
    #[napi(value = "i32")]
    I32,
    #[napi(value = "f32")]
    F32,
    #[napi(value = "bool")]
    Bool,
    #[napi(value = "str")]
    Str,
    #[napi(value = "arr")]
    Arr,
    #[napi(value = "u64")]
    U64,
    #[napi(value = "i64")]
    I64,
    #[napi(value = "f64")]
    F64,
}

// The valid strings, for weft-napi's error when JS passes another one.
napi::ctor::declarative::ctor! {
    #[ctor(unsafe)]
    fn register_gguf_value_type() {
        napi::register_string_enum(
            "GgufValueType",
            &["u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"],
        );
    }
}

impl GgufValueType {
    fn engine(self) -> ValueType {
        match self {
            GgufValueType::U8 => ValueType::U8,
            GgufValueType::I8 => ValueType::I8,
            GgufValueType::U16 => ValueType::U16,
            GgufValueType::I16 => ValueType::I16,
            GgufValueType::U32 => ValueType::U32,
            GgufValueType::I32 => ValueType::I32,
            GgufValueType::F32 => ValueType::F32,
            GgufValueType::Bool => ValueType::Bool,
            GgufValueType::Str => ValueType::String,
            GgufValueType::Arr => ValueType::Array,
            GgufValueType::U64 => ValueType::U64,
            GgufValueType::I64 => ValueType::I64,
            GgufValueType::F64 => ValueType::F64,
        }
    }
}

/// One tensor listed in a GGUF file.
#[napi(object)]
pub struct GgufTensorInfo {
    pub name: String,
    #[napi(js_name = "type")]
    pub ty: GgmlType,
    /// Dims as the file lists them (trailing 1s dropped by ggml's writer).
    pub shape: Vec<i64>,
    /// ne padded with 1s to 4 dims.
    pub ne: Vec<i64>,
    /// Byte offset of the data from the start of the data section.
    pub offset: i64,
    /// Bytes of data.
    pub size: i64,
}

#[napi(custom_finalize)]
pub struct Gguf {
    inner: Option<GgufFile>,
    /// A copy made by fromBytes, reported to V8 (an opened file is mapped: the OS pages it).
    external: External,
}

crate::memory::release_external_on_finalize!(Gguf);

impl Gguf {
    fn get_file(&self) -> Result<&GgufFile> {
        self.inner.as_ref().ok_or_else(|| disposed("Gguf"))
    }
}

#[napi]
impl Gguf {
    /// Not callable: files are opened by Gguf.open(path) or Gguf.fromBytes(bytes).
    #[napi(catch_unwind, constructor, skip_typescript)]
    pub fn new() -> Result<Gguf> {
        Err(not_constructible("Gguf", "Gguf.open(path) and Gguf.fromBytes(bytes)"))
    }

    /// gguf_init_from_file: open and validate a GGUF file (v2 or v3), memory-mapped.
    #[napi(catch_unwind, factory)]
    pub fn open(path: String) -> Result<Gguf> {
        Ok(Gguf { inner: Some(GgufFile::open(&path).js()?), external: External::default() })
    }

    /// Parse GGUF bytes held in memory.
    #[napi(catch_unwind, factory)]
    pub fn from_bytes(env: &Env, data: Uint8Array) -> Result<Gguf> {
        Ok(Gguf { inner: Some(GgufFile::from_slice(&data).js()?), external: External::report(env, data.len()) })
    }

    #[napi(catch_unwind, getter)]
    pub fn version(&self) -> Result<u32> {
        Ok(self.get_file()?.version())
    }

    #[napi(catch_unwind, getter)]
    pub fn alignment(&self) -> Result<i64> {
        Ok(self.get_file()?.alignment() as i64)
    }

    /// Byte offset of the data section in the file.
    #[napi(catch_unwind, getter)]
    pub fn data_offset(&self) -> Result<i64> {
        Ok(self.get_file()?.data_offset() as i64)
    }

    /// Metadata keys in file order.
    #[napi(catch_unwind)]
    pub fn keys(&self) -> Result<Vec<String>> {
        Ok(self.get_file()?.metadata().iter().map(|(k, _)| k.clone()).collect())
    }

    /// A metadata value (see the class doc for the JS types), or null.
    #[napi(catch_unwind, ts_return_type = "number | bigint | string | boolean | Array<unknown> | null")]
    pub fn get<'e>(&self, env: &'e Env, key: String) -> Result<Option<Unknown<'e>>> {
        match self.get_file()?.get(&key) {
            Some(v) => Ok(Some(value_to_js(env, v).js()?)),
            None => Ok(None),
        }
    }

    /// The GGUF type of a value: 'u32', 'str', 'arr[f32]', 'arr[arr[i32]]' ...; null if absent.
    #[napi(catch_unwind)]
    pub fn get_type(&self, key: String) -> Result<Option<String>> {
        Ok(self.get_file()?.get(&key).map(|v| v.type_desc()))
    }

    /// Tensor infos in file order.
    #[napi(catch_unwind)]
    pub fn tensor_infos(&self) -> Result<Vec<GgufTensorInfo>> {
        self.get_file()?
            .tensors()
            .iter()
            .map(|t| {
                Ok(GgufTensorInfo {
                    name: t.name.clone(),
                    ty: GgmlType::from_engine(t.ty)?,
                    shape: t.shape().to_vec(),
                    ne: t.ne.to_vec(),
                    offset: t.offset as i64,
                    size: t.size as i64,
                })
            })
            .collect()
    }

    /// A copy of one tensor's raw bytes.
    #[napi(catch_unwind)]
    pub fn tensor_data(&self, name: String) -> Result<Uint8Array> {
        let bytes = self.get_file()?.tensor_bytes_checked(&name).js()?;
        let bytes = bytes.ok_or_else(|| invalid(format!("gguf: the file has no tensor named '{name}'")))?;
        Ok(Uint8Array::new(bytes))
    }

    /// Create one tensor per tensor info in `ctx` (file order, named as in the file). With a
    /// noAlloc context, allocate them on a backend and then call loadTensors.
    #[napi(catch_unwind)]
    pub fn create_tensors(&self, ctx: &Context) -> Result<Vec<Tensor>> {
        Ok(weft::gguf::create_tensors(self.get_file()?, ctx.ctx()?).js()?.into_iter().map(Tensor::wrap).collect())
    }

    /// Copy the file's data into these tensors (matched by name; any backend's buffers).
    #[napi(catch_unwind)]
    pub fn load_tensors(&self, tensors: Vec<&Tensor>) -> Result<()> {
        let ts = tensors.iter().map(|t| t.get().cloned()).collect::<Result<Vec<_>>>()?;
        weft::gguf::load_tensors(self.get_file()?, &ts).js()
    }
}

disposable!(Gguf, "Unmap the file now.", external);

#[napi(custom_finalize)]
pub struct GgufWriter {
    /// None once disposed.
    inner: Option<weft::gguf::GgufWriter<'static>>,
    /// The tensor data it holds, reported to V8.
    external: External,
}

crate::memory::release_external_on_finalize!(GgufWriter);

impl GgufWriter {
    fn writer(&mut self) -> Result<&mut weft::gguf::GgufWriter<'static>> {
        self.inner.as_mut().ok_or_else(|| disposed("GgufWriter"))
    }

    fn written(&self) -> Result<&weft::gguf::GgufWriter<'static>> {
        self.inner.as_ref().ok_or_else(|| disposed("GgufWriter"))
    }

    fn report(&self, env: &Env) {
        let held = self.inner.as_ref().map_or(0, |w| w.tensors().iter().map(|t| t.size).sum());
        self.external.update(env, held);
    }
}

#[napi]
impl GgufWriter {
    #[napi(catch_unwind, constructor)]
    pub fn new() -> Self {
        GgufWriter { inner: Some(weft::gguf::GgufWriter::new()), external: External::default() }
    }

    /// Set a metadata value, stored exactly or refused. Without `type`: strings are 'str',
    /// booleans 'bool', bigints 'i64' ('u64' above its range), integers 'i32' ('i64' up to
    /// 2^53), other numbers (fractions, -0, NaN, beyond 2^53) 'f64', arrays 'arr' of the
    /// narrowest type that holds all their elements. With `type`, a value the type cannot
    /// hold is refused ('f32' rounds to the nearest f32, but not to infinity or zero). For
    /// arrays, `type` may be 'arr' and `elementType` the element type.
    #[napi(
        catch_unwind,
        ts_args_type = "key: string, value: number | bigint | string | boolean | Array<unknown>, type?: GgufValueType, elementType?: GgufValueType"
    )]
    pub fn set(
        &mut self,
        key: String,
        value: Unknown,
        ty: Option<GgufValueType>,
        element_type: Option<GgufValueType>,
    ) -> Result<()> {
        let v = js_to_value(&key, &value, ty.map(GgufValueType::engine), element_type.map(GgufValueType::engine))?;
        self.writer()?.set(key, v).js()
    }

    /// general.alignment: a power of two up to 65536 (64 KiB); default 32.
    #[napi(catch_unwind)]
    pub fn set_alignment(&mut self, alignment: f64) -> Result<()> {
        let alignment: u32 = int("setAlignment: alignment", alignment)?;
        self.writer()?.set_alignment(alignment).js()
    }

    /// Add a tensor's current data (from any backend) under its name.
    #[napi(catch_unwind)]
    pub fn add_tensor(&mut self, env: &Env, tensor: &Tensor) -> Result<()> {
        weft::gguf::add_tensor_from(self.writer()?, tensor.get()?).js()?;
        self.report(env);
        Ok(())
    }

    /// Add raw tensor data: `shape` ne[0] first (1 to 4 dims), `data` exactly its bytes.
    #[napi(catch_unwind)]
    pub fn add_tensor_data(
        &mut self,
        env: &Env,
        name: String,
        ty: GgmlType,
        shape: Vec<f64>,
        data: Uint8Array,
    ) -> Result<()> {
        let shape = dims("addTensorData: shape", &shape)?;
        self.writer()?.add_tensor(name, ty.to_engine()?, &shape, data.to_vec()).js()?;
        self.report(env);
        Ok(())
    }

    /// The whole file as bytes.
    #[napi(catch_unwind)]
    pub fn to_bytes(&self) -> Result<Uint8Array> {
        Ok(Uint8Array::new(self.written()?.to_bytes().js()?))
    }

    /// gguf_write_to_file.
    #[napi(catch_unwind)]
    pub fn write_file(&self, path: String) -> Result<()> {
        self.written()?.write_to_file(&path).js()
    }
}

disposable!(GgufWriter, "Drop the metadata and tensor data gathered so far; later calls throw.", external);
