//! Options objects of Context methods (`ctx.conv2d(a, b, { s0, s1, ... })`). Integer
//! fields are declared `f64` and checked here with the method and field named, as
//! arguments are (args.rs).

use crate::args::{int, int_or};
use crate::enums::GgmlType;
use crate::error::Result;
use weft::op::{AdamwParams, Im2colParams, RopeParams};

#[napi(object)]
pub struct ContextOptions {
    /// Bytes of the context's memory pool (ggml's mem_size). Default 16 MiB.
    pub mem_size: Option<f64>,
    /// Create tensor objects only, without memory for their data (ggml's no_alloc): use it when
    /// a backend allocates the tensors. Default false, as in ggml.
    pub no_alloc: Option<bool>,
}

#[napi(object)]
#[derive(Default)]
pub struct RopeOptions {
    /// Rotated dims (n_dims); default a.ne[0].
    pub n_dims: Option<f64>,
    /// 0 = normal, 2 = GPT-NeoX (ggml's GGML_ROPE_TYPE_NEOX). Default 0.
    #[napi(ts_type = "0 | 2")]
    pub mode: Option<f64>,
    pub n_ctx_orig: Option<f64>,
    /// Default 10000.
    pub freq_base: Option<f64>,
    /// Default 1.
    pub freq_scale: Option<f64>,
    /// YaRN extrapolation mix; default 0.
    pub ext_factor: Option<f64>,
    /// Default 1.
    pub attn_factor: Option<f64>,
    /// Default 32.
    pub beta_fast: Option<f64>,
    /// Default 1.
    pub beta_slow: Option<f64>,
}

impl RopeOptions {
    /// The rope params of method `what` on tensor `a`, defaults filled in.
    pub fn params(o: Option<RopeOptions>, a: &weft::Tensor, what: &str) -> Result<RopeParams> {
        let o = o.unwrap_or_default();
        let field = |f: &str| format!("{what}: options.{f}");
        Ok(RopeParams {
            n_dims: int_or(&field("nDims"), o.n_dims, a.ne()[0].clamp(i32::MIN as i64, i32::MAX as i64) as i32)?,
            mode: int_or(&field("mode"), o.mode, 0)?,
            n_ctx_orig: int_or(&field("nCtxOrig"), o.n_ctx_orig, 0)?,
            freq_base: o.freq_base.unwrap_or(10000.0) as f32,
            freq_scale: o.freq_scale.unwrap_or(1.0) as f32,
            ext_factor: o.ext_factor.unwrap_or(0.0) as f32,
            attn_factor: o.attn_factor.unwrap_or(1.0) as f32,
            beta_fast: o.beta_fast.unwrap_or(32.0) as f32,
            beta_slow: o.beta_slow.unwrap_or(1.0) as f32,
        })
    }
}

#[napi(object, js_name = "Im2colOptions")]
pub struct Im2colOptions {
    pub s0: f64,
    pub s1: Option<f64>,
    pub p0: f64,
    pub p1: Option<f64>,
    pub d0: f64,
    pub d1: Option<f64>,
    #[napi(js_name = "is2D")]
    pub is_2d: bool,
    /// Output type, 'f32' or 'f16'. Default 'f32'.
    pub dst_type: Option<GgmlType>,
}

impl Im2colOptions {
    pub fn params(&self, what: &str) -> Result<Im2colParams> {
        let field = |f: &str| format!("{what}: options.{f}");
        Ok(Im2colParams {
            s0: int(&field("s0"), self.s0)?,
            s1: int_or(&field("s1"), self.s1, 0)?,
            p0: int(&field("p0"), self.p0)?,
            p1: int_or(&field("p1"), self.p1, 0)?,
            d0: int(&field("d0"), self.d0)?,
            d1: int_or(&field("d1"), self.d1, 0)?,
            is_2d: self.is_2d,
        })
    }
}

#[napi(object, js_name = "Conv2dOptions")]
pub struct Conv2dOptions {
    pub s0: f64,
    pub s1: f64,
    pub p0: f64,
    pub p1: f64,
    pub d0: f64,
    pub d1: f64,
}

impl Conv2dOptions {
    /// [s0, s1, p0, p1, d0, d1].
    pub fn ints(&self, what: &str) -> Result<[i32; 6]> {
        let v = [self.s0, self.s1, self.p0, self.p1, self.d0, self.d1];
        let names = ["s0", "s1", "p0", "p1", "d0", "d1"];
        let mut out = [0; 6];
        for i in 0..6 {
            out[i] = int(&format!("{what}: options.{}", names[i]), v[i])?;
        }
        Ok(out)
    }
}

#[napi(object, js_name = "Pool2dOptions")]
pub struct Pool2dOptions {
    pub k0: f64,
    pub k1: f64,
    pub s0: f64,
    pub s1: f64,
    pub p0: f64,
    pub p1: f64,
}

impl Pool2dOptions {
    /// ([k0, k1, s0, s1], p0, p1): the padding is a float in ggml.
    pub fn params(&self, what: &str) -> Result<([i32; 4], f32, f32)> {
        let v = [self.k0, self.k1, self.s0, self.s1];
        let names = ["k0", "k1", "s0", "s1"];
        let mut out = [0; 4];
        for i in 0..4 {
            out[i] = int(&format!("{what}: options.{}", names[i]), v[i])?;
        }
        Ok((out, self.p0 as f32, self.p1 as f32))
    }
}

#[napi(object)]
pub struct AdamwOptions {
    /// Learning rate.
    pub alpha: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    /// Weight decay.
    pub wd: f64,
}

impl AdamwOptions {
    pub fn params(&self) -> AdamwParams {
        AdamwParams {
            alpha: self.alpha as f32,
            beta1: self.beta1 as f32,
            beta2: self.beta2 as f32,
            eps: self.eps as f32,
            wd: self.wd as f32,
        }
    }
}
