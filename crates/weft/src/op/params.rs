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

impl RopeParams {
    /// ggml's theta_scale: powf(freq_base, -2 / n_dims), the ratio of successive pairs' angles.
    pub fn theta_scale(&self) -> f32 {
        self.freq_base.powf(-2.0 / self.n_dims as f32)
    }

    /// ggml_rope_yarn_corr_dims: where YaRN's ramp between interpolation and extrapolation
    /// starts and ends. With n_ctx_orig = 0 this is [0, -inf] (the logs diverge), as in ggml.
    pub fn yarn_corr_dims(&self) -> [f32; 2] {
        // ggml_rope_yarn_corr_dim: the dimension at which the rotation count over
        // n_ctx_orig positions equals n_rot.
        let dim = |n_rot: f32| {
            self.n_dims as f32 * (self.n_ctx_orig as f32 / (n_rot * 2.0 * std::f32::consts::PI)).ln()
                / (2.0 * self.freq_base.ln())
        };
        [c_max(0.0, dim(self.beta_fast).floor()), c_min((self.n_dims - 1) as f32, dim(self.beta_slow).ceil())]
    }
}

/// C's MAX and MIN macros (`a > b ? a : b`), which ggml's YaRN math uses; they differ from
/// f32::max/min on NaN.
#[inline]
pub fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}
#[inline]
pub fn c_min(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// The bases of ggml's ALiBi slopes for `n_head` heads (SOFT_MAX and FLASH_ATTN_EXT):
/// (m0, m1, n_head_log2); head h < n_head_log2 has slope m0^(h+1), the others
/// m1^(2(h - n_head_log2) + 1). The powers are powf, as in ggml. (1, 1, 0) without ALiBi.
pub fn alibi_bases(max_bias: f32, n_head: u32) -> (f32, f32, u32) {
    if max_bias <= 0.0 {
        return (1.0, 1.0, 0);
    }
    let n_head_log2 = 1u32 << (n_head.max(1) as f64).log2().floor() as u32;
    let m0 = 2f32.powf(-max_bias / n_head_log2 as f32);
    let m1 = 2f32.powf(-(max_bias / 2.0) / n_head_log2 as f32);
    (m0, m1, n_head_log2)
}

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

#[cfg(test)]
mod tests {
    use super::alibi_bases;

    #[test]
    fn alibi_bases_follow_ggml() {
        // 8 heads, max_bias 8: n_head_log2 = 8, m0 = 2^-1, m1 = 2^-0.5.
        assert_eq!(alibi_bases(8.0, 8), (0.5, 2f32.powf(-0.5), 8));
        // 6 heads: n_head_log2 = 4.
        assert_eq!(alibi_bases(8.0, 6).2, 4);
        assert_eq!(alibi_bases(0.0, 6), (1.0, 1.0, 0));
    }
}
