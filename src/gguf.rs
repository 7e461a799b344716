//! JS classes Gguf (a GGUF file opened for reading, memory-mapped) and GgufWriter. Values
//! map to JS as: 8-32 bit ints and floats -> number, u64/i64 -> bigint, bool -> boolean,
//! str -> string, arrays -> arrays (nested arrays nest).

use napi::bindgen_prelude::{BigInt, Uint8Array, Unknown};
use napi::{Env, JsValue, ValueType as JsType};
use weft::gguf::{Array, GgufFile, Value, ValueType};

use crate::context::Context;
use crate::enums::GgmlType;
use crate::error::{disposed, invalid, IntoJs, Result};
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

fn array_to_js<'e>(env: &'e Env, a: &Array) -> napi::Result<Unknown<'e>> {
    macro_rules! list {
        ($v:expr, $conv:expr) => {{
            let mut arr = env.create_array($v.len() as u32)?;
            for (i, x) in $v.iter().enumerate() {
                arr.set(i as u32, $conv(x)?)?;
            }
            arr.into_unknown(env)
        }};
    }
    use napi::bindgen_prelude::ToNapiValue;
    match a {
        Array::U8(v) => list!(v, |x: &u8| napi::Result::Ok(*x as f64)),
        Array::I8(v) => list!(v, |x: &i8| napi::Result::Ok(*x as f64)),
        Array::U16(v) => list!(v, |x: &u16| napi::Result::Ok(*x as f64)),
        Array::I16(v) => list!(v, |x: &i16| napi::Result::Ok(*x as f64)),
        Array::U32(v) => list!(v, |x: &u32| napi::Result::Ok(*x as f64)),
        Array::I32(v) => list!(v, |x: &i32| napi::Result::Ok(*x as f64)),
        Array::F32(v) => list!(v, |x: &f32| napi::Result::Ok(*x as f64)),
        Array::F64(v) => list!(v, |x: &f64| napi::Result::Ok(*x)),
        Array::Bool(v) => list!(v, |x: &bool| napi::Result::Ok(*x)),
        Array::String(v) => list!(v, |x: &String| napi::Result::Ok(x.clone())),
        Array::U64(v) => list!(v, |x: &u64| napi::Result::Ok(BigInt::from(*x))),
        Array::I64(v) => list!(v, |x: &i64| napi::Result::Ok(BigInt::from(*x))),
        Array::Array(v) => list!(v, |x: &Array| array_to_js(env, x)),
    }
}

fn value_to_js<'e>(env: &'e Env, v: &Value) -> napi::Result<Unknown<'e>> {
    use napi::bindgen_prelude::ToNapiValue;
    match v {
        Value::U8(x) => (*x as f64).into_unknown(env),
        Value::I8(x) => (*x as f64).into_unknown(env),
        Value::U16(x) => (*x as f64).into_unknown(env),
        Value::I16(x) => (*x as f64).into_unknown(env),
        Value::U32(x) => (*x as f64).into_unknown(env),
        Value::I32(x) => (*x as f64).into_unknown(env),
        Value::F32(x) => (*x as f64).into_unknown(env),
        Value::F64(x) => x.into_unknown(env),
        Value::Bool(x) => x.into_unknown(env),
        Value::String(x) => x.as_str().into_unknown(env),
        Value::U64(x) => BigInt::from(*x).into_unknown(env),
        Value::I64(x) => BigInt::from(*x).into_unknown(env),
        Value::Array(a) => array_to_js(env, a),
    }
}

#[napi]
pub struct Gguf {
    inner: Option<GgufFile>,
}

impl Gguf {
    fn get_file(&self) -> Result<&GgufFile> {
        self.inner.as_ref().ok_or_else(|| disposed("Gguf"))
    }
}

#[napi]
impl Gguf {
    /// gguf_init_from_file: open and validate a GGUF file (v2 or v3), memory-mapped.
    #[napi(catch_unwind, factory)]
    pub fn open(path: String) -> Result<Gguf> {
        Ok(Gguf { inner: Some(GgufFile::open(&path).js()?) })
    }

    /// Parse GGUF bytes held in memory.
    #[napi(catch_unwind, factory)]
    pub fn from_bytes(data: Uint8Array) -> Result<Gguf> {
        Ok(Gguf { inner: Some(GgufFile::from_slice(&data).js()?) })
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
        let f = self.get_file()?;
        let bytes =
            f.tensor_bytes(&name).ok_or_else(|| invalid(format!("gguf: the file has no tensor named '{name}'")))?;
        Ok(Uint8Array::new(bytes.to_vec()))
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

disposable!(Gguf, "Unmap the file now.");

/// What kind of JS value this is, for inferring a GGUF type.
fn infer_type(v: &Unknown) -> Result<ValueType> {
    Ok(match v.get_type().js()? {
        JsType::String => ValueType::String,
        JsType::Boolean => ValueType::Bool,
        JsType::BigInt => ValueType::I64,
        JsType::Number => {
            let x: f64 = unsafe { v.cast() }.js()?;
            if x.fract() == 0.0 && x >= i32::MIN as f64 && x <= i32::MAX as f64 {
                ValueType::I32
            } else if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
                ValueType::I64
            } else {
                ValueType::F32
            }
        }
        JsType::Object if v.is_array().js()? => ValueType::Array,
        other => return Err(invalid(format!("gguf writer: cannot store a JS {other:?} value"))),
    })
}

fn as_f64(key: &str, v: &Unknown) -> Result<f64> {
    match v.get_type().js()? {
        JsType::Number => unsafe { v.cast::<f64>() }.js(),
        JsType::BigInt => Ok(unsafe { v.cast::<BigInt>() }.js()?.get_i128().0 as f64),
        _ => Err(invalid(format!("gguf writer: key '{key}': expected a number"))),
    }
}

fn as_i128(key: &str, v: &Unknown) -> Result<i128> {
    match v.get_type().js()? {
        JsType::BigInt => Ok(unsafe { v.cast::<BigInt>() }.js()?.get_i128().0),
        JsType::Number => {
            let x: f64 = unsafe { v.cast() }.js()?;
            if x.fract() != 0.0 || !x.is_finite() {
                return Err(invalid(format!("gguf writer: key '{key}': {x} is not an integer")));
            }
            Ok(x as i128)
        }
        _ => Err(invalid(format!("gguf writer: key '{key}': expected an integer"))),
    }
}

fn int<T: TryFrom<i128>>(key: &str, ty: ValueType, v: &Unknown) -> Result<T> {
    let x = as_i128(key, v)?;
    T::try_from(x).map_err(|_| invalid(format!("gguf writer: key '{key}': {x} does not fit {ty}")))
}

fn scalar(key: &str, ty: ValueType, v: &Unknown) -> Result<Value> {
    Ok(match ty {
        ValueType::U8 => Value::U8(int(key, ty, v)?),
        ValueType::I8 => Value::I8(int(key, ty, v)?),
        ValueType::U16 => Value::U16(int(key, ty, v)?),
        ValueType::I16 => Value::I16(int(key, ty, v)?),
        ValueType::U32 => Value::U32(int(key, ty, v)?),
        ValueType::I32 => Value::I32(int(key, ty, v)?),
        ValueType::U64 => Value::U64(int(key, ty, v)?),
        ValueType::I64 => Value::I64(int(key, ty, v)?),
        ValueType::F32 => Value::F32(as_f64(key, v)? as f32),
        ValueType::F64 => Value::F64(as_f64(key, v)?),
        ValueType::Bool => match v.get_type().js()? {
            JsType::Boolean => Value::Bool(unsafe { v.cast() }.js()?),
            _ => return Err(invalid(format!("gguf writer: key '{key}': expected a boolean"))),
        },
        ValueType::String => match v.get_type().js()? {
            JsType::String => Value::String(unsafe { v.cast() }.js()?),
            _ => return Err(invalid(format!("gguf writer: key '{key}': expected a string"))),
        },
        ValueType::Array => Value::Array(array(key, v, None)?),
    })
}

/// A JS array as a GGUF array; the element type is given or inferred from the first element.
fn array(key: &str, v: &Unknown, element: Option<ValueType>) -> Result<Array> {
    if !v.is_array().js()? {
        return Err(invalid(format!("gguf writer: key '{key}': expected an array")));
    }
    let items: Vec<Unknown> = unsafe { v.cast() }.js()?;
    let ty = match (element, items.first()) {
        (Some(t), _) => t,
        (None, Some(first)) => infer_type(first)?,
        (None, None) => {
            return Err(invalid(format!("gguf writer: key '{key}': give an element type for an empty array")))
        }
    };
    if ty == ValueType::Array {
        return Ok(Array::Array(items.iter().map(|x| array(key, x, None)).collect::<Result<_>>()?));
    }
    let mut out = Array::empty(ty);
    for x in &items {
        let val = scalar(key, ty, x)?;
        push(&mut out, val);
    }
    Ok(out)
}

fn push(a: &mut Array, v: Value) {
    match (a, v) {
        (Array::U8(a), Value::U8(x)) => a.push(x),
        (Array::I8(a), Value::I8(x)) => a.push(x),
        (Array::U16(a), Value::U16(x)) => a.push(x),
        (Array::I16(a), Value::I16(x)) => a.push(x),
        (Array::U32(a), Value::U32(x)) => a.push(x),
        (Array::I32(a), Value::I32(x)) => a.push(x),
        (Array::F32(a), Value::F32(x)) => a.push(x),
        (Array::Bool(a), Value::Bool(x)) => a.push(x),
        (Array::String(a), Value::String(x)) => a.push(x),
        (Array::U64(a), Value::U64(x)) => a.push(x),
        (Array::I64(a), Value::I64(x)) => a.push(x),
        (Array::F64(a), Value::F64(x)) => a.push(x),
        (Array::Array(a), Value::Array(x)) => a.push(x),
        // scalar() built `v` with the array's own element type.
        _ => {}
    }
}

#[napi]
pub struct GgufWriter {
    /// None once disposed.
    inner: Option<weft::gguf::GgufWriter<'static>>,
}

impl GgufWriter {
    fn writer(&mut self) -> Result<&mut weft::gguf::GgufWriter<'static>> {
        self.inner.as_mut().ok_or_else(|| disposed("GgufWriter"))
    }

    fn written(&self) -> Result<&weft::gguf::GgufWriter<'static>> {
        self.inner.as_ref().ok_or_else(|| disposed("GgufWriter"))
    }
}

#[napi]
impl GgufWriter {
    #[napi(catch_unwind, constructor)]
    pub fn new() -> Self {
        GgufWriter { inner: Some(weft::gguf::GgufWriter::new()) }
    }

    /// Set a metadata value. Without `type`, strings are 'str', booleans 'bool', bigints 'i64',
    /// integers 'i32' (or 'i64' beyond), other numbers 'f32', arrays 'arr' of the first
    /// element's type. For arrays, `type` may be 'arr' and `elementType` the element type.
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
        let t = match ty {
            Some(t) => t.engine(),
            None => infer_type(&value)?,
        };
        let v = if t == ValueType::Array {
            Value::Array(array(&key, &value, element_type.map(GgufValueType::engine))?)
        } else {
            scalar(&key, t, &value)?
        };
        self.writer()?.set(key, v).js()
    }

    /// general.alignment (a power of two; default 32).
    #[napi(catch_unwind)]
    pub fn set_alignment(&mut self, alignment: u32) -> Result<()> {
        self.writer()?.set_alignment(alignment).js()
    }

    /// Add a tensor's current data (from any backend) under its name.
    #[napi(catch_unwind)]
    pub fn add_tensor(&mut self, tensor: &Tensor) -> Result<()> {
        weft::gguf::add_tensor_from(self.writer()?, tensor.get()?).js()
    }

    /// Add raw tensor data: `shape` ne[0] first (1 to 4 dims), `data` exactly its bytes.
    #[napi(catch_unwind)]
    pub fn add_tensor_data(&mut self, name: String, ty: GgmlType, shape: Vec<i64>, data: Uint8Array) -> Result<()> {
        self.writer()?.add_tensor(name, ty.to_engine()?, &shape, data.to_vec()).js()
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

disposable!(GgufWriter, "Drop the metadata and tensor data gathered so far; later calls throw.");
