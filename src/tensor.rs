//! JS class Tensor: a handle on an engine tensor node (shape, strides, type, op, sources)
//! and the way to move data in and out of it.

use napi::bindgen_prelude::{AsyncTask, BigInt64Array, Float32Array, Int32Array, TypedArray, Uint8Array, Unknown};
use napi::Env;

use crate::args::{int, opt_number, string, uint};
use crate::enums::GgmlType;
use crate::error::{disposed, not_constructible, IntoJs, Result};
use crate::task::{promise, Promised, ReadJob};
use weft::backend::BusyGuard;
use weft::tensor::flags;
use weft::Type;

#[napi]
pub struct Tensor {
    inner: Option<weft::Tensor>,
}

impl Tensor {
    pub fn wrap(t: weft::Tensor) -> Tensor {
        Tensor { inner: Some(t) }
    }

    /// The engine tensor, or an Error once disposed.
    pub fn get(&self) -> Result<&weft::Tensor> {
        self.inner.as_ref().ok_or_else(|| disposed("Tensor"))
    }

    /// (tensor, offset, length) of a byte range, all of the tensor from `offset` by default.
    /// The engine checks the range against the tensor before allocating anything.
    fn byte_range(
        &self,
        what: &str,
        offset: Option<f64>,
        length: Option<f64>,
    ) -> Result<(&weft::Tensor, usize, usize)> {
        let t = self.get()?;
        let off = uint(&format!("{what}: offset"), offset.unwrap_or(0.0))?;
        let len = match length {
            Some(l) => uint(&format!("{what}: length"), l)?,
            None => t.nbytes().saturating_sub(off),
        };
        Ok((t, off, len))
    }
}

fn dims(v: impl IntoIterator<Item = i64>) -> Vec<i64> {
    v.into_iter().collect()
}

#[napi]
impl Tensor {
    /// Not callable: tensors are made by Context methods.
    #[napi(catch_unwind, constructor, skip_typescript)]
    pub fn new() -> Result<Tensor> {
        Err(not_constructible("Tensor", "Context methods (ctx.newTensor1d, ctx.add ...)"))
    }

    /// Unique id of the underlying node: two Tensor objects with the same id are the same tensor.
    #[napi(catch_unwind, getter)]
    pub fn id(&self) -> Result<i64> {
        Ok(self.get()?.id() as i64)
    }

    /// Element type, as ggml names it ('f32', 'q4_K', ...).
    #[napi(catch_unwind, getter, js_name = "type")]
    pub fn ty(&self) -> Result<GgmlType> {
        GgmlType::from_engine(self.get()?.ty())
    }

    /// Number of elements in each of the 4 dims (ggml's ne), ne[0] fastest.
    #[napi(catch_unwind, getter)]
    pub fn ne(&self) -> Result<Vec<i64>> {
        Ok(dims(self.get()?.ne()))
    }

    /// Shape with trailing 1s dropped (at least one dim).
    #[napi(catch_unwind, getter)]
    pub fn shape(&self) -> Result<Vec<i64>> {
        let t = self.get()?;
        Ok(t.ne()[..t.n_dims()].to_vec())
    }

    /// Byte strides of each dim (ggml's nb).
    #[napi(catch_unwind, getter)]
    pub fn nb(&self) -> Result<Vec<i64>> {
        Ok(dims(self.get()?.nb().map(|x| x as i64)))
    }

    #[napi(catch_unwind, getter)]
    pub fn name(&self) -> Result<String> {
        Ok(self.get()?.name())
    }

    /// ggml_set_name: names longer than 63 bytes are cut, as in ggml.
    #[napi(catch_unwind, setter, js_name = "name")]
    pub fn set_name(&self, #[napi(ts_arg_type = "string")] name: Unknown) -> Result<()> {
        let name = string("name", &name)?;
        self.get()?.set_name(&name);
        Ok(())
    }

    /// The op that computes this tensor ('NONE' for leaves), by ggml_op_name.
    #[napi(catch_unwind, getter, ts_return_type = "OpName")]
    pub fn op(&self) -> Result<String> {
        Ok(self.get()?.op().name().to_string())
    }

    /// ggml_op_desc: the unary op's name for UNARY ('GELU'), the op name otherwise.
    #[napi(catch_unwind, getter, ts_return_type = "OpName | UnaryOp")]
    pub fn op_desc(&self) -> Result<String> {
        Ok(self.get()?.op().desc().to_string())
    }

    /// Source `i` (ggml's src[i]), or null.
    #[napi(catch_unwind)]
    pub fn src(&self, i: f64) -> Result<Option<Tensor>> {
        let i: u32 = int("src: i", i)?;
        Ok(self.get()?.src(i as usize).cloned().map(Tensor::wrap))
    }

    /// All source slots up to the last present one (holes are null).
    #[napi(catch_unwind, getter)]
    pub fn srcs(&self) -> Result<Vec<Option<Tensor>>> {
        Ok(self.get()?.srcs().iter().map(|s| s.clone().map(Tensor::wrap)).collect())
    }

    /// The tensor whose memory this view uses, or null.
    #[napi(catch_unwind, getter)]
    pub fn view_src(&self) -> Result<Option<Tensor>> {
        Ok(self.get()?.view_src().cloned().map(Tensor::wrap))
    }

    #[napi(catch_unwind, getter)]
    pub fn view_offs(&self) -> Result<i64> {
        Ok(self.get()?.view_offs() as i64)
    }

    #[napi(catch_unwind, getter)]
    pub fn nelements(&self) -> Result<i64> {
        Ok(self.get()?.nelements())
    }

    #[napi(catch_unwind, getter)]
    pub fn nrows(&self) -> Result<i64> {
        Ok(self.get()?.nrows())
    }

    /// ggml_nbytes: bytes spanned, strides included.
    #[napi(catch_unwind, getter)]
    pub fn nbytes(&self) -> Result<i64> {
        Ok(self.get()?.nbytes() as i64)
    }

    #[napi(catch_unwind, getter)]
    pub fn n_dims(&self) -> Result<u32> {
        Ok(self.get()?.n_dims() as u32)
    }

    #[napi(catch_unwind, getter)]
    pub fn element_size(&self) -> Result<i64> {
        Ok(self.get()?.element_size() as i64)
    }

    #[napi(catch_unwind)]
    pub fn is_contiguous(&self) -> Result<bool> {
        Ok(self.get()?.is_contiguous())
    }

    #[napi(catch_unwind)]
    pub fn is_transposed(&self) -> Result<bool> {
        Ok(self.get()?.is_transposed())
    }

    #[napi(catch_unwind)]
    pub fn is_permuted(&self) -> Result<bool> {
        Ok(self.get()?.is_permuted())
    }

    #[napi(catch_unwind)]
    pub fn is_view(&self) -> Result<bool> {
        Ok(self.get()?.is_view())
    }

    #[napi(catch_unwind)]
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.get()?.is_empty())
    }

    #[napi(catch_unwind)]
    pub fn is_scalar(&self) -> Result<bool> {
        Ok(self.get()?.is_scalar())
    }

    #[napi(catch_unwind)]
    pub fn is_vector(&self) -> Result<bool> {
        Ok(self.get()?.is_vector())
    }

    #[napi(catch_unwind)]
    pub fn is_matrix(&self) -> Result<bool> {
        Ok(self.get()?.is_matrix())
    }

    #[napi(catch_unwind)]
    pub fn same_shape(&self, other: &Tensor) -> Result<bool> {
        Ok(self.get()?.same_shape(other.get()?))
    }

    /// ggml_can_repeat(this, to).
    #[napi(catch_unwind)]
    pub fn can_repeat(&self, to: &Tensor) -> Result<bool> {
        Ok(self.get()?.can_repeat_to(to.get()?))
    }

    /// Same node as `other`.
    #[napi(catch_unwind)]
    pub fn equals(&self, other: &Tensor) -> Result<bool> {
        Ok(self.get()?.ptr_eq(other.get()?))
    }

    /// Bit set of INPUT=1, OUTPUT=2, PARAM=4, LOSS=8.
    #[napi(catch_unwind, getter)]
    pub fn flags(&self) -> Result<u32> {
        Ok(self.get()?.flags())
    }

    /// ggml_set_input: allocators place inputs first and never overwrite them.
    #[napi(catch_unwind)]
    pub fn set_input(&self) -> Result<()> {
        self.get()?.set_flags(flags::INPUT);
        Ok(())
    }

    /// ggml_set_output: allocators never reuse an output's memory.
    #[napi(catch_unwind)]
    pub fn set_output(&self) -> Result<()> {
        self.get()?.set_flags(flags::OUTPUT);
        Ok(())
    }

    /// ggml_set_param: a trainable parameter.
    #[napi(catch_unwind)]
    pub fn set_param(&self) -> Result<()> {
        self.get()?.set_param();
        Ok(())
    }

    /// ggml_set_loss: the scalar f32 a backward pass starts from (graph reset sets its
    /// gradient to 1).
    #[napi(catch_unwind)]
    pub fn set_loss(&self) -> Result<()> {
        self.get()?.set_loss().js()
    }

    /// The gradient of this tensor (ggml's t->grad), or null: ctx.buildBackwardExpand gives
    /// one to every parameter and every node that depends on one.
    #[napi(catch_unwind, getter)]
    pub fn grad(&self) -> Result<Option<Tensor>> {
        Ok(self.get()?.grad().map(Tensor::wrap))
    }

    /// Whether a buffer holds this tensor's data (allocCtxTensors / a graph allocator).
    #[napi(catch_unwind, getter)]
    pub fn is_allocated(&self) -> Result<bool> {
        Ok(self.get()?.is_allocated())
    }

    /// Name of the buffer type holding the data ('CPU', 'WebGPU0'), or null.
    #[napi(catch_unwind, getter)]
    pub fn buffer_name(&self) -> Result<Option<String>> {
        Ok(self.get()?.storage().map(|s| s.buffer.name()))
    }

    /// ggml_backend_tensor_set: copy raw bytes (any TypedArray or Buffer) into the tensor at
    /// a byte offset.
    #[napi(catch_unwind)]
    pub fn set(&self, data: TypedArray, offset: Option<f64>) -> Result<()> {
        let off = uint("set: offset", offset.unwrap_or(0.0))?;
        weft::backend::tensor_set(self.get()?, &data.arraybuffer, off).js()
    }

    /// ggml_backend_tensor_get: raw bytes (all of ggml_nbytes by default). Synchronous: on
    /// a GPU backend it waits for the copy; getAsync does the same off the event loop.
    #[napi(catch_unwind, js_name = "get")]
    pub fn get_bytes(&self, offset: Option<f64>, length: Option<f64>) -> Result<Uint8Array> {
        let (t, off, len) = self.byte_range("get", offset, length)?;
        Ok(Uint8Array::new(weft::backend::tensor_read(t, off, len).js()?))
    }

    /// get() off the event loop (worth it for GPU buffers, whose readback waits on the device).
    /// Every failure rejects the Promise.
    #[napi(
        catch_unwind,
        ts_args_type = "offset?: number | undefined | null, length?: number | undefined | null",
        ts_return_type = "Promise<Uint8Array>"
    )]
    pub fn get_async(&self, offset: Option<Unknown>, length: Option<Unknown>) -> AsyncTask<Promised<ReadJob>> {
        promise(|| {
            let offset = opt_number("getAsync: offset", offset)?;
            let length = opt_number("getAsync: length", length)?;
            let (t, off, len) = self.byte_range("getAsync", offset, length)?;
            let busy = BusyGuard::for_reads([t]).js()?;
            Ok(ReadJob { tensor: t.clone(), range: Some((off, len)), busy })
        })
    }

    /// toFloat32() off the event loop. Every failure rejects the Promise.
    #[napi(catch_unwind, ts_return_type = "Promise<Float32Array>")]
    pub fn to_float32_async(&self) -> AsyncTask<Promised<ReadJob>> {
        promise(|| {
            let t = self.get()?;
            let busy = BusyGuard::for_reads([t]).js()?;
            Ok(ReadJob { tensor: t.clone(), range: None, busy })
        })
    }

    /// The elements of an integer tensor (i8, i16, i32) as Int32Array, in logical order
    /// (ne[0] fastest) following its strides: argmax and argsort results, getRows indices.
    #[napi(catch_unwind)]
    pub fn to_int32(&self) -> Result<Int32Array> {
        let v = weft::backend::tensor_to_i64("toInt32", self.get()?, &[Type::I8, Type::I16, Type::I32]).js()?;
        Ok(Int32Array::new(v.into_iter().map(|x| x as i32).collect()))
    }

    /// The elements of an integer tensor (i8, i16, i32, i64) as BigInt64Array, in logical
    /// order: countEqual's i64 result, or any integer tensor without loss.
    #[napi(catch_unwind)]
    pub fn to_big_int64(&self) -> Result<BigInt64Array> {
        let all = [Type::I8, Type::I16, Type::I32, Type::I64];
        Ok(BigInt64Array::new(weft::backend::tensor_to_i64("toBigInt64", self.get()?, &all).js()?))
    }

    /// The elements as f32 in logical order (ne[0] fastest), converting from the tensor's type
    /// and following its strides.
    #[napi(catch_unwind)]
    pub fn to_float32(&self) -> Result<Float32Array> {
        Ok(Float32Array::new(weft::backend::tensor_to_f32(self.get()?).js()?))
    }

    /// Write f32 values (logical order, one per element) converting to the tensor's type.
    #[napi(catch_unwind, js_name = "fromFloat32")]
    pub fn write_float32(&self, data: Float32Array) -> Result<()> {
        weft::backend::tensor_from_f32(self.get()?, &data).js()
    }

    /// Fill all bytes of the tensor with `value` (ggml_backend_tensor_memset).
    #[napi(catch_unwind)]
    pub fn memset(&self, value: f64) -> Result<()> {
        let value: u8 = int("memset: value", value)?;
        let t = self.get()?;
        weft::backend::tensor_memset(t, value, 0, t.nbytes()).js()
    }

    #[napi(catch_unwind, getter)]
    pub fn disposed(&self) -> bool {
        self.inner.is_none()
    }

    #[napi(catch_unwind, js_name = "toString")]
    pub fn describe(&self) -> String {
        match &self.inner {
            Some(t) => format!("Tensor({} {} {:?} op={})", t.label(), t.ty(), t.ne(), t.op().desc()),
            None => "Tensor(disposed)".into(),
        }
    }

    /// util.inspect / console.log: `Tensor { name, type, shape, op, buffer, values }`, the
    /// values for tensors of at most INSPECT_VALUES elements in host memory.
    #[napi(catch_unwind, symbol_for = "nodejs.util.inspect.custom")]
    pub fn inspect(
        &self,
        env: Env,
        _depth: Option<Unknown>,
        options: Option<Unknown>,
        inspect: Option<Unknown>,
    ) -> Result<String> {
        let (Some(t), Some(inspect)) = (&self.inner, inspect) else { return Ok(self.describe()) };
        crate::inspect::inspect_tensor(&env, t, options, inspect)
    }
}

disposable!(Tensor, "Drop this handle now. The node lives on while graphs or other handles use it.");
