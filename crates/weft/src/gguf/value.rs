//! Metadata values: GGUF's value types (ggml's `enum gguf_type`), the values themselves, and
//! the typed accessors callers use to read them.

/// Generates, from one table of GGUF's value types, the `ValueType` enum, the `Value` and
/// `Array` enums (one variant per type), the accessors that only restate the table, and the
/// `From` conversions into `Value` and `Array`.
macro_rules! value_types {
    ($( $variant:ident = $id:literal, $name:literal, $t:ty, $as_fn:ident; )*) => {
        /// A metadata value type, numbered as ggml numbers `enum gguf_type` (these ids are
        /// what the file stores).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ValueType { $( $variant = $id, )* }

        /// One metadata value.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Value { $( $variant($t), )* }

        /// A metadata array. GGUF arrays are homogeneous, so each element type is its own
        /// `Vec` (a tokenizer's 150k scores stay one `Vec<f32>`, not 150k values). An array
        /// of arrays holds inner arrays that each carry their own element type, as the
        /// format allows.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Array { $( $variant(Vec<$t>), )* }

        impl ValueType {
            /// Every value type, in id order.
            pub const ALL: [ValueType; 13] = [ $( ValueType::$variant, )* ];

            /// ggml's `gguf_type_name` (`"u8"`, `"str"`, `"arr"` ...).
            pub const fn name(self) -> &'static str {
                match self { $( ValueType::$variant => $name, )* }
            }
        }

        impl Value {
            pub fn value_type(&self) -> ValueType {
                match self { $( Value::$variant(_) => ValueType::$variant, )* }
            }
        }

        impl Array {
            /// The type of the elements (for an empty array too: the file states it).
            pub fn element_type(&self) -> ValueType {
                match self { $( Array::$variant(_) => ValueType::$variant, )* }
            }

            pub fn len(&self) -> usize {
                match self { $( Array::$variant(v) => v.len(), )* }
            }

            /// An empty array of the given element type.
            pub fn empty(element_type: ValueType) -> Array {
                match element_type { $( ValueType::$variant => Array::$variant(Vec::new()), )* }
            }

            /// Append a value of the array's element type; a value of another type is
            /// handed back.
            pub fn push(&mut self, value: Value) -> Result<(), Value> {
                match (self, value) {
                    $( (Array::$variant(a), Value::$variant(x)) => { a.push(x); Ok(()) } )*
                    (_, v) => Err(v),
                }
            }

            $(
                #[doc = concat!("The elements if this is an array of `", stringify!($t), "`.")]
                pub fn $as_fn(&self) -> Option<&[$t]> {
                    match self { Array::$variant(v) => Some(v), _ => None }
                }
            )*
        }

        $(
            impl From<$t> for Value {
                fn from(x: $t) -> Value { Value::$variant(x) }
            }
            impl From<Vec<$t>> for Array {
                fn from(v: Vec<$t>) -> Array { Array::$variant(v) }
            }
        )*
    };
}

value_types! {
    U8 = 0, "u8", u8, as_u8;
    I8 = 1, "i8", i8, as_i8;
    U16 = 2, "u16", u16, as_u16;
    I16 = 3, "i16", i16, as_i16;
    U32 = 4, "u32", u32, as_u32;
    I32 = 5, "i32", i32, as_i32;
    F32 = 6, "f32", f32, as_f32;
    Bool = 7, "bool", bool, as_bool;
    String = 8, "str", String, as_str;
    Array = 9, "arr", Array, as_arrays;
    U64 = 10, "u64", u64, as_u64;
    I64 = 11, "i64", i64, as_i64;
    F64 = 12, "f64", f64, as_f64;
}

impl ValueType {
    /// The type with ggml's id, if there is one.
    pub fn from_id(id: u32) -> Option<ValueType> {
        ValueType::ALL.get(usize::try_from(id).ok()?).copied()
    }

    pub const fn id(self) -> u32 {
        self as u32
    }

    /// Bytes one value of a fixed-size type takes in the file; `None` for strings and arrays,
    /// whose size depends on their contents.
    pub const fn fixed_size(self) -> Option<usize> {
        match self {
            ValueType::U8 | ValueType::I8 | ValueType::Bool => Some(1),
            ValueType::U16 | ValueType::I16 => Some(2),
            ValueType::U32 | ValueType::I32 | ValueType::F32 => Some(4),
            ValueType::U64 | ValueType::I64 | ValueType::F64 => Some(8),
            ValueType::String | ValueType::Array => None,
        }
    }

    /// The fewest bytes one value of this type can take in the file: what a count is checked
    /// against before anything is allocated for it. A string is at least its u64 length, an
    /// array at least its u32 element type and u64 count.
    pub const fn min_size(self) -> usize {
        match self.fixed_size() {
            Some(n) => n,
            None if matches!(self, ValueType::String) => 8,
            None => 12,
        }
    }
}

impl std::fmt::Display for ValueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Array {
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How deep arrays nest in this one: 1 for an array of scalars or strings (or an empty
    /// array of arrays), 2 for an array of such arrays, and so on.
    pub fn depth(&self) -> usize {
        match self {
            Array::Array(inner) => 1 + inner.iter().map(Array::depth).max().unwrap_or(0),
            _ => 1,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<Vec<&str>> for Array {
    fn from(v: Vec<&str>) -> Array {
        Array::String(v.into_iter().map(String::from).collect())
    }
}

// Slices and vectors of anything an `Array` can be made of.
impl<T: Clone> From<&[T]> for Array
where
    Vec<T>: Into<Array>,
{
    fn from(v: &[T]) -> Array {
        v.to_vec().into()
    }
}

impl<T> From<Vec<T>> for Value
where
    Vec<T>: Into<Array>,
{
    fn from(v: Vec<T>) -> Value {
        Value::Array(v.into())
    }
}

impl<T: Clone> From<&[T]> for Value
where
    Vec<T>: Into<Array>,
{
    fn from(v: &[T]) -> Value {
        Value::Array(v.to_vec().into())
    }
}

impl Value {
    /// Short type description for messages: `"u32"`, `"arr[str]"`, `"arr[arr]"`.
    pub fn type_desc(&self) -> String {
        match self {
            Value::Array(a) => format!("arr[{}]", a.element_type()),
            v => v.value_type().name().to_string(),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Any integer value, widened. Files disagree on which integer type a key uses (one
    /// converter writes `i32`, another `u32`), so integer readers accept them all.
    pub fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            Value::U8(x) => x.into(),
            Value::I8(x) => x.into(),
            Value::U16(x) => x.into(),
            Value::I16(x) => x.into(),
            Value::U32(x) => x.into(),
            Value::I32(x) => x.into(),
            Value::U64(x) => x.into(),
            Value::I64(x) => x.into(),
            _ => return None,
        })
    }

    /// An integer value of any integer type that fits in `u32`.
    pub fn to_u32(&self) -> Option<u32> {
        self.as_i128().and_then(|x| x.try_into().ok())
    }

    /// An integer value of any integer type that fits in `i32`.
    pub fn to_i32(&self) -> Option<i32> {
        self.as_i128().and_then(|x| x.try_into().ok())
    }

    /// An integer value of any integer type that fits in `u64`.
    pub fn to_u64(&self) -> Option<u64> {
        self.as_i128().and_then(|x| x.try_into().ok())
    }

    /// An integer value of any integer type that fits in `i64`.
    pub fn to_i64(&self) -> Option<i64> {
        self.as_i128().and_then(|x| x.try_into().ok())
    }

    /// An `f32` value. `f64` values are not narrowed: that would lose precision silently.
    pub fn to_f32(&self) -> Option<f32> {
        match *self {
            Value::F32(x) => Some(x),
            _ => None,
        }
    }

    /// An `f32` or `f64` value as `f64` (widening `f32` is exact).
    pub fn to_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(x) => Some(x.into()),
            Value::F64(x) => Some(x),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_keeps_arrays_homogeneous() {
        let mut a = Array::empty(ValueType::I32);
        a.push(Value::I32(3)).unwrap();
        assert_eq!(a.push(Value::F32(1.5)), Err(Value::F32(1.5)));
        assert_eq!(a, Array::I32(vec![3]));
        let mut nested = Array::empty(ValueType::Array);
        nested.push(Value::Array(a.clone())).unwrap();
        assert_eq!(nested.depth(), 2);
    }

    #[test]
    fn ids_and_names_follow_ggml() {
        for (i, t) in ValueType::ALL.iter().enumerate() {
            assert_eq!(t.id() as usize, i);
            assert_eq!(ValueType::from_id(i as u32), Some(*t));
        }
        assert_eq!(ValueType::from_id(13), None);
        assert_eq!(ValueType::from_id(u32::MAX), None);
        assert_eq!(ValueType::String.name(), "str");
        assert_eq!(ValueType::Array.min_size(), 12);
        assert_eq!(ValueType::Bool.fixed_size(), Some(1));
    }

    #[test]
    fn integer_accessors_convert_only_what_fits() {
        assert_eq!(Value::I32(7).to_u32(), Some(7));
        assert_eq!(Value::I32(-1).to_u32(), None);
        assert_eq!(Value::U64(u64::MAX).to_i64(), None);
        assert_eq!(Value::U8(200).to_i64(), Some(200));
        assert_eq!(Value::F32(1.0).to_u32(), None);
        assert_eq!(Value::F32(0.5).to_f64(), Some(0.5));
        assert_eq!(Value::F64(0.5).to_f32(), None);
    }

    #[test]
    fn arrays_know_their_type_length_and_depth() {
        let nested = Array::Array(vec![Array::from(vec![1i32, 2]), Array::from(vec!["a"])]);
        assert_eq!(nested.element_type(), ValueType::Array);
        assert_eq!(nested.len(), 2);
        assert_eq!(nested.depth(), 2);
        assert_eq!(Array::empty(ValueType::Array).depth(), 1);
        assert_eq!(Value::from(nested).type_desc(), "arr[arr]");
        assert_eq!(Array::from(vec![1.5f32]).as_f32(), Some(&[1.5f32][..]));
        assert_eq!(Array::from(vec![1.5f32]).as_f64(), None);
    }
}
