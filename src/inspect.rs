//! How a Tensor prints in Node (util.inspect, console.log), as onnxruntime-node's Tensor
//! does: name, type, shape, op and buffer, and the values of a small tensor in host memory
//! (reading a GPU buffer would wait on the device; a buffer a compute is using is left alone).

use napi::bindgen_prelude::{BigInt64Array, Either3, Float32Array, FnArgs, Function, Int32Array, Object, Unknown};
use napi::{Env, ValueType};
use weft::Type;

use crate::error::{IntoJs, Result};

/// Tensors of at most this many elements show their values (util.inspect then shows the
/// first 100 unless told otherwise).
pub const INSPECT_VALUES: i64 = 1024;

type Values = Either3<Float32Array, Int32Array, BigInt64Array>;

/// `Tensor { name, type, shape, op, buffer, values? }`, formatted by Node's `inspect` with the
/// caller's options (colors, depth).
pub fn inspect_tensor(env: &Env, t: &weft::Tensor, options: Option<Unknown>, inspect: Unknown) -> Result<String> {
    if inspect.get_type().js()? != ValueType::Function {
        return Ok(format!("Tensor({} {} {:?})", t.label(), t.ty(), t.ne()));
    }
    let mut obj = Object::new(env).js()?;
    obj.set("name", t.name()).js()?;
    obj.set("type", t.ty().name()).js()?;
    obj.set("shape", t.ne()[..t.n_dims()].to_vec()).js()?;
    obj.set("op", t.op().desc()).js()?;
    obj.set("buffer", t.storage().map(|s| s.buffer.name())).js()?;
    if let Some(values) = values(t) {
        obj.set("values", values).js()?;
    }
    // SAFETY: checked to be a function; util.inspect(value, options) returns a string
    let inspect: Function<FnArgs<(Object, Option<Unknown>)>, String> = unsafe { inspect.cast() }.js()?;
    Ok(format!("Tensor {}", inspect.call(FnArgs::from((obj, options))).js()?))
}

/// The values, typed as the tensor's reads type them (toInt32 / toBigInt64 / toFloat32), or
/// None when they are not worth or not safe to read.
fn values(t: &weft::Tensor) -> Option<Values> {
    let s = t.storage()?;
    if !s.buffer.is_host() || s.buffer.state().in_use() || s.buffer.is_released() || t.nelements() > INSPECT_VALUES {
        return None;
    }
    let ints = |types: &[Type]| weft::backend::tensor_to_i64("inspect", t, types).ok();
    Some(match t.ty() {
        Type::I8 | Type::I16 | Type::I32 => {
            Either3::B(Int32Array::new(ints(&[t.ty()])?.into_iter().map(|x| x as i32).collect()))
        }
        Type::I64 => Either3::C(BigInt64Array::new(ints(&[Type::I64])?)),
        _ => Either3::A(Float32Array::new(weft::backend::tensor_to_f32(t).ok()?)),
    })
}
