//! THE op table: every ggml op declared once, with its ggml name, its symbol and its typed
//! params. `Op` carries the params; `OpKind` is the bare enum for tables and matching on
//! kind alone. Backends `match` on `Op` with no catch-all arm, so an op added here fails to
//! compile until every backend has answered for it.
//!
//! Constructors (shape rules, checks, params) are `Context` methods in the `build_*` files.

mod backward;
mod build_basic;
mod build_conv;
mod build_layout;
mod build_nn;
mod build_reduce;
mod params;

pub use backward::AdamwParams;
pub use params::*;

macro_rules! define_ops {
    ($( $variant:ident $( { $($field:ident : $fty:ty),* $(,)? } )? => $name:literal, $symbol:literal; )*) => {
        /// An op with its params (ggml's `op` + `op_params`, typed).
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum Op {
            $( $variant $( { $($field: $fty),* } )?, )*
        }

        /// The op without params.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpKind {
            $( $variant, )*
        }

        impl OpKind {
            /// Every op in ggml's order (custom map ops excepted: they take C callbacks).
            pub const ALL: &'static [OpKind] = &[ $( OpKind::$variant, )* ];

            /// ggml_op_name: `"MUL_MAT"`.
            pub const fn name(self) -> &'static str {
                match self { $( OpKind::$variant => $name, )* }
            }

            /// ggml_op_symbol: `"X*Y"`.
            pub const fn symbol(self) -> &'static str {
                match self { $( OpKind::$variant => $symbol, )* }
            }

            pub fn from_name(name: &str) -> Option<OpKind> {
                match name { $( $name => Some(OpKind::$variant), )* _ => None }
            }
        }

        impl Op {
            pub const fn kind(&self) -> OpKind {
                match self { $( Op::$variant { .. } => OpKind::$variant, )* }
            }
        }
    };
}

define_ops! {
    None => "NONE", "none";

    Dup => "DUP", "x";
    Add => "ADD", "x+y";
    Add1 => "ADD1", "x+y";
    Acc { nb1: usize, nb2: usize, nb3: usize, offset: usize, inplace: bool } => "ACC", "view(x,nb,offset)+=y->x";
    Sub => "SUB", "x-y";
    Mul => "MUL", "x*y";
    Div => "DIV", "x/y";
    Sqr => "SQR", "x^2";
    Sqrt => "SQRT", "√x";
    Log => "LOG", "log(x)";
    Sin => "SIN", "sin(x)";
    Cos => "COS", "cos(x)";
    Sum => "SUM", "Σx";
    SumRows => "SUM_ROWS", "Σx_k";
    Mean => "MEAN", "Σx/n";
    Argmax => "ARGMAX", "argmax(x)";
    CountEqual => "COUNT_EQUAL", "count_equal(x)";
    Repeat => "REPEAT", "repeat(x)";
    RepeatBack => "REPEAT_BACK", "repeat_back(x)";
    Concat { dim: i32 } => "CONCAT", "concat(x, y)";
    SiluBack => "SILU_BACK", "silu_back(x)";
    Norm { eps: f32 } => "NORM", "norm(x)";
    RmsNorm { eps: f32 } => "RMS_NORM", "rms_norm(x)";
    RmsNormBack { eps: f32 } => "RMS_NORM_BACK", "rms_norm_back(x)";
    GroupNorm { n_groups: i32, eps: f32 } => "GROUP_NORM", "group_norm(x)";

    MulMat { prec: Prec } => "MUL_MAT", "X*Y";
    MulMatId => "MUL_MAT_ID", "X[i]*Y";
    OutProd => "OUT_PROD", "X*Y";

    Scale { s: f32 } => "SCALE", "x*v";
    Set { nb1: usize, nb2: usize, nb3: usize, offset: usize, inplace: bool } => "SET", "y-\\>view(x)";
    Cpy => "CPY", "x-\\>y";
    Cont => "CONT", "cont(x)";
    Reshape => "RESHAPE", "reshape(x)";
    View { offset: usize } => "VIEW", "view(x)";
    Permute { axes: [i32; 4] } => "PERMUTE", "permute(x)";
    Transpose => "TRANSPOSE", "transpose(x)";
    GetRows => "GET_ROWS", "get_rows(x)";
    GetRowsBack => "GET_ROWS_BACK", "get_rows_back(x)";
    Diag => "DIAG", "diag(x)";
    DiagMaskInf { n_past: i32 } => "DIAG_MASK_INF", "diag_mask_inf(x)";
    DiagMaskZero { n_past: i32 } => "DIAG_MASK_ZERO", "diag_mask_zero(x)";
    SoftMax { scale: f32, max_bias: f32 } => "SOFT_MAX", "soft_max(x)";
    SoftMaxBack => "SOFT_MAX_BACK", "soft_max_back(x)";
    Rope { p: RopeParams } => "ROPE", "rope(x)";
    RopeBack { p: RopeParams } => "ROPE_BACK", "rope_back(x)";
    Clamp { min: f32, max: f32 } => "CLAMP", "clamp(x)";
    ConvTranspose1d { s0: i32, p0: i32, d0: i32 } => "CONV_TRANSPOSE_1D", "conv_transpose_1d(x)";
    Im2col { p: Im2colParams } => "IM2COL", "im2col(x)";
    Im2colBack { p: Im2colParams } => "IM2COL_BACK", "im2col_back(x)";
    ConvTranspose2d { stride: i32 } => "CONV_TRANSPOSE_2D", "conv_transpose_2d(x)";
    Pool1d { op: PoolOp, k0: i32, s0: i32, p0: i32 } => "POOL_1D", "pool_1d(x)";
    Pool2d { p: Pool2dParams } => "POOL_2D", "pool_2d(x)";
    Pool2dBack { p: Pool2dParams } => "POOL_2D_BACK", "pool_2d_back(x)";
    Upscale => "UPSCALE", "upscale(x)";
    Pad => "PAD", "pad(x)";
    Arange { start: f32, stop: f32, step: f32 } => "ARANGE", "arange(start, stop, step)";
    TimestepEmbedding { dim: i32, max_period: i32 } => "TIMESTEP_EMBEDDING", "timestep_embedding(timesteps, dim, max_period)";
    Argsort { order: SortOrder } => "ARGSORT", "argsort(x)";
    LeakyRelu { negative_slope: f32 } => "LEAKY_RELU", "leaky_relu(x)";

    FlashAttnExt { scale: f32, max_bias: f32, logit_softcap: f32, prec: Prec } => "FLASH_ATTN_EXT", "flash_attn_ext(x)";
    FlashAttnBack { masked: bool } => "FLASH_ATTN_BACK", "flash_attn_back(x)";
    SsmConv => "SSM_CONV", "ssm_conv(x)";
    SsmScan => "SSM_SCAN", "ssm_scan(x)";
    WinPart { npx: i32, npy: i32, w: i32 } => "WIN_PART", "win_part(x)";
    WinUnpart { w: i32 } => "WIN_UNPART", "win_unpart(x)";
    GetRelPos => "GET_REL_POS", "get_rel_pos(x)";
    AddRelPos { inplace: bool } => "ADD_REL_POS", "add_rel_pos(x)";
    RwkvWkv => "RWKV_WKV", "rwkv_wkv(k, v, r, tf, td, s)";

    Unary { op: UnaryOp } => "UNARY", "unary(x)";

    CrossEntropyLoss => "CROSS_ENTROPY_LOSS", "cross_entropy_loss(x,y)";
    CrossEntropyLossBack => "CROSS_ENTROPY_LOSS_BACK", "cross_entropy_loss_back(x,y)";
    OptStepAdamw { iter: i64, alpha: f32, beta1: f32, beta2: f32, eps: f32, wd: f32 } => "OPT_STEP_ADAMW", "adamw(x)";
}

impl Op {
    pub const fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// ggml_op_desc: the unary op's own name for UNARY, the op name otherwise.
    pub fn desc(&self) -> &'static str {
        match self {
            Op::Unary { op } => op.name(),
            _ => self.name(),
        }
    }
}

impl OpKind {
    /// Ops that only reinterpret their source's memory (ggml_is_view_op).
    pub const fn is_view(self) -> bool {
        matches!(self, OpKind::View | OpKind::Reshape | OpKind::Permute | OpKind::Transpose)
    }

    /// Views and leaves (NONE): nodes a backend has nothing to compute for.
    pub const fn computes_nothing(self) -> bool {
        self.is_view() || matches!(self, OpKind::None)
    }

    /// Ops whose result may overwrite their first source (ggml-alloc's ggml_op_can_inplace).
    pub const fn can_inplace(self) -> bool {
        matches!(
            self,
            OpKind::Scale
                | OpKind::DiagMaskZero
                | OpKind::DiagMaskInf
                | OpKind::Add
                | OpKind::Add1
                | OpKind::Sub
                | OpKind::Mul
                | OpKind::Div
                | OpKind::Sqr
                | OpKind::Sqrt
                | OpKind::Log
                | OpKind::Unary
                | OpKind::Rope
                | OpKind::RmsNorm
                | OpKind::SoftMax
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for &k in OpKind::ALL {
            assert!(seen.insert(k.name()), "duplicate {}", k.name());
            assert_eq!(OpKind::from_name(k.name()), Some(k));
        }
        // ggml has 81 ops at the reference commit; weft leaves out its 8 MAP_* custom ops.
        assert_eq!(OpKind::ALL.len(), 81 - 8);
        assert_eq!(Op::MulMat { prec: Prec::Default }.name(), "MUL_MAT");
        assert_eq!(Op::Unary { op: UnaryOp::GeluQuick }.desc(), "GELU_QUICK");
        assert_eq!(OpKind::Set.symbol(), "y-\\>view(x)");
    }
}
