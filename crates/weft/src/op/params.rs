//! Typed op params: the enums and param groups that ggml packs into `op_params`.

macro_rules! named_enum {
    ($(#[$m:meta])* $name:ident { $( $variant:ident = $s:literal ),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $( $variant, )* }

        impl $name {
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )* ];
            pub const fn name(self) -> &'static str {
                match self { $( $name::$variant => $s, )* }
            }
            pub fn from_name(s: &str) -> Option<$name> {
                match s { $( $s => Some($name::$variant), )* _ => None }
            }
        }
    };
}

named_enum! {
    /// ggml_unary_op, named as ggml_unary_op_name prints them.
    UnaryOp {
        Abs = "ABS", Sgn = "SGN", Neg = "NEG", Step = "STEP", Tanh = "TANH", Elu = "ELU",
        Relu = "RELU", Sigmoid = "SIGMOID", Gelu = "GELU", GeluQuick = "GELU_QUICK",
        Silu = "SILU", Hardswish = "HARDSWISH", Hardsigmoid = "HARDSIGMOID", Exp = "EXP",
    }
}

named_enum! {
    /// ggml_op_pool.
    PoolOp { Max = "max", Avg = "avg" }
}

named_enum! {
    /// ggml_sort_order.
    SortOrder { Asc = "asc", Desc = "desc" }
}

named_enum! {
    /// ggml_prec: precision requested for MUL_MAT / FLASH_ATTN_EXT accumulation.
    Prec { Default = "default", F32 = "f32" }
}

/// ROPE / ROPE_BACK params (ggml_rope_ext's arguments).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RopeParams {
    pub n_dims: i32,
    pub mode: i32,
    pub n_ctx_orig: i32,
    pub freq_base: f32,
    pub freq_scale: f32,
    pub ext_factor: f32,
    pub attn_factor: f32,
    pub beta_fast: f32,
    pub beta_slow: f32,
}

/// ggml's rope modes: bit 1 selects GPT-NeoX style rotation.
pub const ROPE_TYPE_NEOX: i32 = 2;

/// IM2COL / IM2COL_BACK params.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Im2colParams {
    pub s0: i32,
    pub s1: i32,
    pub p0: i32,
    pub p1: i32,
    pub d0: i32,
    pub d1: i32,
    pub is_2d: bool,
}

/// POOL_2D / POOL_2D_BACK params. ggml takes float paddings but stores them as int32,
/// so kernels see the truncated values; the output size uses the float ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2dParams {
    pub op: PoolOp,
    pub k0: i32,
    pub k1: i32,
    pub s0: i32,
    pub s1: i32,
    pub p0: i32,
    pub p1: i32,
}
