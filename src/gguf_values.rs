//! GGUF metadata values to and from JS. Reading: 8-32 bit ints and floats -> number,
//! u64/i64 -> bigint, bool -> boolean, str -> string, arrays -> arrays (nested arrays nest).
//! Writing: a value is stored exactly or refused. Without a type, numbers take the
//! narrowest type that holds them exactly ('i32', 'i64' for safe integers, 'f64' for the
//! rest, -0 included), bigints 'i64' ('u64' above i64's range), and arrays the narrowest
//! type that holds all their elements. With a type, a value it cannot hold is refused
//! ('f32' rounds to the nearest f32, but not to infinity or to zero).

use napi::bindgen_prelude::{BigInt, ToNapiValue, Unknown};
use napi::{Env, JsValue, ValueType as JsType};
use weft::gguf::{Array, Value, ValueType, MAX_ARRAY_DEPTH};

use crate::error::{invalid, IntoJs, Result};

/// Largest integer a JS number holds exactly (Number.MAX_SAFE_INTEGER).
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

pub fn array_to_js<'e>(env: &'e Env, a: &Array) -> napi::Result<Unknown<'e>> {
    macro_rules! list {
        ($v:expr, $conv:expr) => {{
            let mut arr = env.create_array($v.len() as u32)?;
            for (i, x) in $v.iter().enumerate() {
                arr.set(i as u32, $conv(x)?)?;
            }
            arr.into_unknown(env)
        }};
    }
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

pub fn value_to_js<'e>(env: &'e Env, v: &Value) -> napi::Result<Unknown<'e>> {
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

/// The GGUF value of JS `value` under `key`: of type `ty` if given (for arrays,
/// `element` the element type), else of the type that holds it exactly.
pub fn js_to_value(key: &str, value: &Unknown, ty: Option<ValueType>, element: Option<ValueType>) -> Result<Value> {
    let w = Writing { key };
    let t = match ty {
        Some(t) => t,
        None => w.infer(value, 0)?,
    };
    if t == ValueType::Array {
        return Ok(Value::Array(w.array(value, element, 0)?));
    }
    w.scalar(t, value)
}

/// One `set` call: the key names the value in every error.
struct Writing<'k> {
    key: &'k str,
}

/// The narrowest of i32, i64, f64 that holds the number exactly.
fn number_type(x: f64) -> ValueType {
    let whole = x.is_finite() && x.fract() == 0.0 && !(x == 0.0 && x.is_sign_negative());
    if whole && x >= i32::MIN as f64 && x <= i32::MAX as f64 {
        ValueType::I32
    } else if whole && x.abs() <= MAX_SAFE {
        ValueType::I64
    } else {
        ValueType::F64
    }
}

/// The wider of two types inferred for elements of one array.
fn widen(a: ValueType, b: ValueType) -> Option<ValueType> {
    use ValueType::*;
    Some(match (a, b) {
        (x, y) if x == y => x,
        (I32, I64) | (I64, I32) => I64,
        (I32 | I64 | F64, I32 | I64 | F64) => F64,
        (I64, U64) | (U64, I64) => U64,
        _ => return None,
    })
}

impl Writing<'_> {
    fn fail(&self, msg: impl std::fmt::Display) -> crate::error::JsError {
        invalid(format!("gguf writer: key '{}': {msg}", self.key))
    }

    fn kind(&self, v: &Unknown) -> Result<JsType> {
        v.get_type().js()
    }

    fn number(&self, v: &Unknown) -> Result<f64> {
        unsafe { v.cast::<f64>() }.js()
    }

    fn bigint(&self, v: &Unknown) -> Result<i128> {
        let (x, lossless) = unsafe { v.cast::<BigInt>() }.js()?.get_i128();
        if !lossless {
            return Err(self.fail("the bigint is beyond 128 bits"));
        }
        Ok(x)
    }

    /// The type that holds this JS value exactly.
    fn infer(&self, v: &Unknown, depth: usize) -> Result<ValueType> {
        Ok(match self.kind(v)? {
            JsType::String => ValueType::String,
            JsType::Boolean => ValueType::Bool,
            JsType::BigInt => match self.bigint(v)? {
                x if i64::try_from(x).is_ok() => ValueType::I64,
                x if u64::try_from(x).is_ok() => ValueType::U64,
                x => return Err(self.fail(format!("{x} fits neither i64 nor u64"))),
            },
            JsType::Number => number_type(self.number(v)?),
            JsType::Object if v.is_array().js()? => {
                self.check_depth(depth)?;
                ValueType::Array
            }
            other => return Err(self.fail(format!("cannot store a JS {other:?} value"))),
        })
    }

    /// Arrays nest at most MAX_ARRAY_DEPTH deep: checked before recursing, so a hostile
    /// nesting cannot exhaust the stack.
    fn check_depth(&self, depth: usize) -> Result<()> {
        if depth >= MAX_ARRAY_DEPTH {
            return Err(self.fail(format!("arrays nest more than {MAX_ARRAY_DEPTH} deep")));
        }
        Ok(())
    }

    /// The type that holds every element exactly.
    fn infer_elements(&self, items: &[Unknown], depth: usize) -> Result<ValueType> {
        let Some(first) = items.first() else {
            return Err(self.fail("give an element type for an empty array"));
        };
        let mut t = self.infer(first, depth + 1)?;
        for x in &items[1..] {
            let u = self.infer(x, depth + 1)?;
            t = widen(t, u).ok_or_else(|| self.fail(format!("an array cannot hold both {t} and {u} elements")))?;
        }
        Ok(t)
    }

    fn array(&self, v: &Unknown, element: Option<ValueType>, depth: usize) -> Result<Array> {
        self.check_depth(depth)?;
        if !v.is_array().js()? {
            return Err(self.fail("expected an array"));
        }
        let items: Vec<Unknown> = unsafe { v.cast() }.js()?;
        let ty = match element {
            Some(t) => t,
            None => self.infer_elements(&items, depth)?,
        };
        if ty == ValueType::Array {
            return Ok(Array::Array(items.iter().map(|x| self.array(x, None, depth + 1)).collect::<Result<_>>()?));
        }
        let mut out = Array::empty(ty);
        for x in &items {
            let val = self.scalar(ty, x)?;
            out.push(val).map_err(|v| self.fail(format!("a {} value in an array of {ty}", v.type_desc())))?;
        }
        Ok(out)
    }

    /// A whole number (or bigint) of integer type T.
    fn int<T: TryFrom<i128>>(&self, ty: ValueType, v: &Unknown) -> Result<T> {
        let x = match self.kind(v)? {
            JsType::BigInt => self.bigint(v)?,
            JsType::Number => {
                let x = self.number(v)?;
                if !x.is_finite() || x.fract() != 0.0 {
                    return Err(self.fail(format!("{x} is not an integer, as {ty} needs")));
                }
                x as i128
            }
            _ => return Err(self.fail(format!("expected an integer for {ty}"))),
        };
        T::try_from(x).map_err(|_| self.fail(format!("{x} does not fit {ty}")))
    }

    /// A number (or a bigint f64 holds exactly) as f64.
    fn float(&self, ty: ValueType, v: &Unknown) -> Result<f64> {
        match self.kind(v)? {
            JsType::Number => self.number(v),
            JsType::BigInt => {
                let x = self.bigint(v)?;
                let f = x as f64;
                if f as i128 != x {
                    return Err(self.fail(format!("{x} is not exactly representable as {ty}")));
                }
                Ok(f)
            }
            _ => Err(self.fail(format!("expected a number for {ty}"))),
        }
    }

    fn scalar(&self, ty: ValueType, v: &Unknown) -> Result<Value> {
        Ok(match ty {
            ValueType::U8 => Value::U8(self.int(ty, v)?),
            ValueType::I8 => Value::I8(self.int(ty, v)?),
            ValueType::U16 => Value::U16(self.int(ty, v)?),
            ValueType::I16 => Value::I16(self.int(ty, v)?),
            ValueType::U32 => Value::U32(self.int(ty, v)?),
            ValueType::I32 => Value::I32(self.int(ty, v)?),
            ValueType::U64 => Value::U64(self.int(ty, v)?),
            ValueType::I64 => Value::I64(self.int(ty, v)?),
            ValueType::F32 => {
                let x = self.float(ty, v)?;
                let f = x as f32;
                if (x.is_finite() && f.is_infinite()) || (x != 0.0 && f == 0.0) {
                    return Err(self.fail(format!("{x} is outside f32's range (use 'f64')")));
                }
                Value::F32(f)
            }
            ValueType::F64 => Value::F64(self.float(ty, v)?),
            ValueType::Bool => match self.kind(v)? {
                JsType::Boolean => Value::Bool(unsafe { v.cast() }.js()?),
                _ => return Err(self.fail("expected a boolean")),
            },
            ValueType::String => match self.kind(v)? {
                JsType::String => Value::String(unsafe { v.cast() }.js()?),
                _ => return Err(self.fail("expected a string")),
            },
            ValueType::Array => Value::Array(self.array(v, None, 1)?),
        })
    }
}
