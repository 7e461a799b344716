//! String enums of the JS API, spelled as ggml prints them ('f32', 'q4_K', 'GELU', 'max').
//! Each maps one to one onto the engine's enum; tests check no variant is missing.

use crate::error::{invalid, Result};

// The doc is a `#[doc = "..."]` literal, not `///`: see binary_methods in context.rs.
macro_rules! js_enum {
    (#[doc = $doc:literal] $js:ident => $engine:ty { $( $v:ident = $s:literal ),* $(,)? }) => {
        #[doc = $doc]
        #[napi(string_enum)]
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $js { $( #[napi(value = $s)] $v, )* }

        // The valid strings, for weft-napi's error when JS passes another one.
        const _: () = {
            #[cfg(not(test))]
            napi::ctor::declarative::ctor! {
                #[ctor(unsafe)]
                fn register() {
                    napi::register_string_enum(stringify!($js), &[$($s),*]);
                }
            }
        };

        impl $js {
            pub fn name(self) -> &'static str {
                match self { $( $js::$v => $s, )* }
            }
            pub fn to_engine(self) -> Result<$engine> {
                <$engine>::from_name(self.name())
                    .ok_or_else(|| invalid(format!("'{}' is not known to the engine", self.name())))
            }
            pub fn from_engine(e: $engine) -> Result<$js> {
                match e.name() {
                    $( $s => Ok($js::$v), )*
                    other => Err(invalid(format!("'{other}' has no JS name"))),
                }
            }
        }
    };
}

js_enum! {
    #[doc = "A tensor element type (ggml_type_name)."]
    GgmlType => weft::Type {
        F32 = "f32", F16 = "f16", Q4_0 = "q4_0", Q4_1 = "q4_1", Q5_0 = "q5_0", Q5_1 = "q5_1",
        Q8_0 = "q8_0", Q8_1 = "q8_1", Q2_K = "q2_K", Q3_K = "q3_K", Q4_K = "q4_K", Q5_K = "q5_K",
        Q6_K = "q6_K", Q8_K = "q8_K", IQ2_XXS = "iq2_xxs", IQ2_XS = "iq2_xs", IQ3_XXS = "iq3_xxs",
        IQ1_S = "iq1_s", IQ4_NL = "iq4_nl", IQ3_S = "iq3_s", IQ2_S = "iq2_s", IQ4_XS = "iq4_xs",
        I8 = "i8", I16 = "i16", I32 = "i32", I64 = "i64", F64 = "f64", IQ1_M = "iq1_m", BF16 = "bf16",
        Q4_0_4_4 = "q4_0_4x4", Q4_0_4_8 = "q4_0_4x8", Q4_0_8_8 = "q4_0_8x8", TQ1_0 = "tq1_0", TQ2_0 = "tq2_0",
    }
}

js_enum! {
    #[doc = "ggml_unary_op, by ggml_unary_op_name."]
    UnaryOp => weft::op::UnaryOp {
        Abs = "ABS", Sgn = "SGN", Neg = "NEG", Step = "STEP", Tanh = "TANH", Elu = "ELU", Relu = "RELU",
        Sigmoid = "SIGMOID", Gelu = "GELU", GeluQuick = "GELU_QUICK", Silu = "SILU", Hardswish = "HARDSWISH",
        Hardsigmoid = "HARDSIGMOID", Exp = "EXP",
    }
}

js_enum! {
    #[doc = "ggml_op_pool."]
    PoolOp => weft::op::PoolOp { Max = "max", Avg = "avg" }
}

js_enum! {
    #[doc = "ggml_sort_order."]
    SortOrder => weft::op::SortOrder { Asc = "asc", Desc = "desc" }
}

js_enum! {
    #[doc = "ggml_prec."]
    Prec => weft::op::Prec { Default = "default", F32 = "f32" }
}

js_enum! {
    #[doc = "ggml_backend_buffer_usage."]
    BufferUsage => weft::backend::BufferUsage { Any = "any", Weights = "weights", Compute = "compute" }
}

js_enum! {
    #[doc = "ggml_backend_dev_type."]
    DeviceType => weft::backend::DeviceType { Cpu = "cpu", Gpu = "gpu", Accel = "accel" }
}

#[napi(object)]
pub struct TypeTraits {
    /// ggml_type_name.
    pub name: String,
    /// ggml's numeric id.
    pub id: u32,
    /// ggml_blck_size: elements per block.
    pub blck_size: u32,
    /// ggml_type_size: bytes per block.
    pub type_size: u32,
    /// ggml_is_quantized.
    pub is_quantized: bool,
}

/// ggml's type table: every element type with its block and type size.
#[napi(catch_unwind)]
pub fn type_traits() -> Vec<TypeTraits> {
    weft::Type::ALL
        .iter()
        .map(|t| TypeTraits {
            name: t.name().to_string(),
            id: t.id(),
            blck_size: t.blck_size() as u32,
            type_size: t.type_size() as u32,
            is_quantized: t.is_quantized(),
        })
        .collect()
}

/// Every op weft declares, by ggml_op_name, in ggml's order.
#[napi(catch_unwind, ts_return_type = "Array<OpName>")]
pub fn op_names() -> Vec<String> {
    weft::OpKind::ALL.iter().map(|k| k.name().to_string()).collect()
}
