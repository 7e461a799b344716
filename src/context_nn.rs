//! Context methods for model ops, convolution and pooling (ggml_mul_mat, ggml_rope_ext,
//! ggml_flash_attn_ext, ggml_conv_2d ...): the rest of context.rs's op methods, split off to
//! keep each file small. Same rules: convert arguments, call the engine.

use crate::args::{int, required};
use crate::context::{ne4, opt, wrap, Context};
use crate::enums::{GgmlType, PoolOp, Prec};
use crate::error::{IntoJs, Result};
use crate::options::{AdamwOptions, Conv2dOptions, Im2colOptions, Pool2dOptions, RopeOptions};
use crate::tensor::Tensor;
use weft::op::RopeParams;

#[napi]
impl Context {
    // ---- matrices and model ops ----

    /// ggml_mul_mat: a [k, n, ...] x b [k, m, ...] -> [n, m, ...]; a broadcasts over b's dims 2, 3.
    #[napi(catch_unwind)]
    pub fn mul_mat(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.mul_mat(a.get()?, b.get()?))
    }
    /// ggml_mul_mat_set_prec.
    #[napi(catch_unwind)]
    pub fn mul_mat_set_prec(&self, t: &Tensor, prec: Prec) -> Result<()> {
        self.ctx()?.mul_mat_set_prec(t.get()?, prec.to_engine()?).js()
    }
    /// ggml_mul_mat_id: per token, the experts `ids` picks from `as`.
    #[napi(catch_unwind, ts_args_type = "as: Tensor, b: Tensor, ids: Tensor")]
    pub fn mul_mat_id(&self, experts: &Tensor, b: &Tensor, ids: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.mul_mat_id(experts.get()?, b.get()?, ids.get()?))
    }
    /// ggml_out_prod: a [m, n] and b [p, n] -> [m, p].
    #[napi(catch_unwind)]
    pub fn out_prod(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.out_prod(a.get()?, b.get()?))
    }
    /// ggml_rope: rotary embedding with positions b (i32), default frequency settings;
    /// `mode` 0 = normal, 2 = GPT-NeoX.
    #[napi(catch_unwind, ts_args_type = "a: Tensor, b: Tensor, nDims: number, mode: 0 | 2")]
    pub fn rope(&self, a: &Tensor, b: &Tensor, n_dims: f64, mode: f64) -> Result<Tensor> {
        let n_dims: i32 = int("rope: nDims", n_dims)?;
        let mode: i32 = int("rope: mode", mode)?;
        let p =
            RopeParams { n_dims, mode, beta_fast: 0.0, beta_slow: 0.0, ..RopeOptions::params(None, a.get()?, "rope")? };
        wrap(self.ctx()?.rope_ext(a.get()?, b.get()?, None, p, false))
    }
    /// ggml_rope_ext: rotary embedding with positions b (i32) and optional frequency factors c.
    #[napi(catch_unwind)]
    pub fn rope_ext(&self, a: &Tensor, b: &Tensor, c: Option<&Tensor>, options: Option<RopeOptions>) -> Result<Tensor> {
        let p = RopeOptions::params(options, a.get()?, "ropeExt")?;
        wrap(self.ctx()?.rope_ext(a.get()?, b.get()?, opt(c)?, p, false))
    }
    /// ggml_rope_ext_inplace.
    #[napi(catch_unwind)]
    pub fn rope_ext_inplace(
        &self,
        a: &Tensor,
        b: &Tensor,
        c: Option<&Tensor>,
        options: Option<RopeOptions>,
    ) -> Result<Tensor> {
        let p = RopeOptions::params(options, a.get()?, "ropeExtInplace")?;
        wrap(self.ctx()?.rope_ext(a.get()?, b.get()?, opt(c)?, p, true))
    }
    /// ggml_rope_back.
    #[napi(catch_unwind)]
    pub fn rope_back(
        &self,
        a: &Tensor,
        b: &Tensor,
        c: Option<&Tensor>,
        options: Option<RopeOptions>,
    ) -> Result<Tensor> {
        let p = RopeOptions::params(options, a.get()?, "ropeBack")?;
        wrap(self.ctx()?.rope_back(a.get()?, b.get()?, opt(c)?, p))
    }
    /// ggml_flash_attn_ext: softmax(q k^T * scale + mask) v, result [d, n_head, n_batch, ...].
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn flash_attn_ext(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        scale: f64,
        max_bias: f64,
        logit_softcap: f64,
    ) -> Result<Tensor> {
        let (q, k, v) = (q.get()?, k.get()?, v.get()?);
        wrap(self.ctx()?.flash_attn_ext(q, k, v, opt(mask)?, scale as f32, max_bias as f32, logit_softcap as f32))
    }
    /// ggml_flash_attn_ext_set_prec.
    #[napi(catch_unwind)]
    pub fn flash_attn_ext_set_prec(&self, t: &Tensor, prec: Prec) -> Result<()> {
        self.ctx()?.flash_attn_ext_set_prec(t.get()?, prec.to_engine()?).js()
    }
    /// ggml_ssm_conv (Mamba).
    #[napi(catch_unwind)]
    pub fn ssm_conv(&self, sx: &Tensor, c: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.ssm_conv(sx.get()?, c.get()?))
    }
    /// ggml_ssm_scan (Mamba).
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn ssm_scan(&self, s: &Tensor, x: &Tensor, dt: &Tensor, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.ssm_scan(s.get()?, x.get()?, dt.get()?, a.get()?, b.get()?, c.get()?))
    }
    /// ggml_rwkv_wkv (RWKV v6).
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn rwkv_wkv(
        &self,
        k: &Tensor,
        v: &Tensor,
        r: &Tensor,
        tf: &Tensor,
        td: &Tensor,
        state: &Tensor,
    ) -> Result<Tensor> {
        wrap(self.ctx()?.rwkv_wkv(k.get()?, v.get()?, r.get()?, tf.get()?, td.get()?, state.get()?))
    }
    /// ggml_opt_step_adamw: one AdamW step on parameter a, in place.
    #[napi(catch_unwind, ts_args_type = "a: Tensor, grad: Tensor, options: AdamwOptions")]
    pub fn opt_step_adamw(&self, a: &Tensor, grad: &Tensor, options: Option<AdamwOptions>) -> Result<Tensor> {
        let p = required("optStepAdamw: options", options)?.params();
        wrap(self.ctx()?.opt_step_adamw(a.get()?, grad.get()?, p.alpha, p.beta1, p.beta2, p.eps, p.wd))
    }

    // ---- convolution and pooling ----

    /// ggml_conv_transpose_1d.
    #[napi(catch_unwind, js_name = "convTranspose1d")]
    pub fn conv_transpose1d(&self, a: &Tensor, b: &Tensor, s0: f64, p0: f64, d0: f64) -> Result<Tensor> {
        let s0: i32 = int("convTranspose1d: s0", s0)?;
        let p0: i32 = int("convTranspose1d: p0", p0)?;
        let d0: i32 = int("convTranspose1d: d0", d0)?;
        wrap(self.ctx()?.conv_transpose_1d(a.get()?, b.get()?, s0, p0, d0))
    }
    /// ggml_conv_transpose_2d_p0.
    #[napi(catch_unwind, js_name = "convTranspose2dP0")]
    pub fn conv_transpose2d_p0(&self, a: &Tensor, b: &Tensor, stride: f64) -> Result<Tensor> {
        let stride: i32 = int("convTranspose2dP0: stride", stride)?;
        wrap(self.ctx()?.conv_transpose_2d_p0(a.get()?, b.get()?, stride))
    }
    /// ggml_im2col: unfold b's patches for a conv with kernel a.
    #[napi(catch_unwind, js_name = "im2col", ts_args_type = "a: Tensor, b: Tensor, options: Im2colOptions")]
    pub fn im2col(&self, a: &Tensor, b: &Tensor, options: Option<Im2colOptions>) -> Result<Tensor> {
        let o = required("im2col: options", options)?;
        let dst = o.dst_type.unwrap_or(GgmlType::F32).to_engine()?;
        wrap(self.ctx()?.im2col(a.get()?, b.get()?, o.params("im2col")?, dst))
    }
    /// ggml_im2col_back: fold gradients b back into an input of shape `ne`.
    #[napi(
        catch_unwind,
        js_name = "im2colBack",
        ts_args_type = "a: Tensor, b: Tensor, ne: Array<number>, options: Im2colOptions"
    )]
    pub fn im2col_back(&self, a: &Tensor, b: &Tensor, ne: Vec<f64>, options: Option<Im2colOptions>) -> Result<Tensor> {
        let ne = ne4("im2colBack: ne", &ne)?;
        let p = required("im2colBack: options", options)?.params("im2colBack")?;
        wrap(self.ctx()?.im2col_back(a.get()?, b.get()?, ne, p))
    }
    /// ggml_conv_1d (im2col + mul_mat).
    #[napi(catch_unwind, js_name = "conv1d")]
    pub fn conv1d(&self, a: &Tensor, b: &Tensor, s0: f64, p0: f64, d0: f64) -> Result<Tensor> {
        let s0: i32 = int("conv1d: s0", s0)?;
        let p0: i32 = int("conv1d: p0", p0)?;
        let d0: i32 = int("conv1d: d0", d0)?;
        wrap(self.ctx()?.conv_1d(a.get()?, b.get()?, s0, p0, d0))
    }
    /// ggml_conv_1d_ph: half padding.
    #[napi(catch_unwind, js_name = "conv1dPh")]
    pub fn conv1d_ph(&self, a: &Tensor, b: &Tensor, s: f64, d: f64) -> Result<Tensor> {
        let s: i32 = int("conv1dPh: s", s)?;
        let d: i32 = int("conv1dPh: d", d)?;
        wrap(self.ctx()?.conv_1d_ph(a.get()?, b.get()?, s, d))
    }
    /// ggml_conv_2d (im2col + mul_mat).
    #[napi(catch_unwind, js_name = "conv2d", ts_args_type = "a: Tensor, b: Tensor, options: Conv2dOptions")]
    pub fn conv2d(&self, a: &Tensor, b: &Tensor, options: Option<Conv2dOptions>) -> Result<Tensor> {
        let [s0, s1, p0, p1, d0, d1] = required("conv2d: options", options)?.ints("conv2d")?;
        wrap(self.ctx()?.conv_2d(a.get()?, b.get()?, s0, s1, p0, p1, d0, d1))
    }
    /// ggml_conv_2d_sk_p0: stride = kernel, no padding.
    #[napi(catch_unwind, js_name = "conv2dSkP0")]
    pub fn conv2d_sk_p0(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.conv_2d_sk_p0(a.get()?, b.get()?))
    }
    /// ggml_conv_2d_s1_ph: stride 1, half padding.
    #[napi(catch_unwind, js_name = "conv2dS1Ph")]
    pub fn conv2d_s1_ph(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.conv_2d_s1_ph(a.get()?, b.get()?))
    }
    /// ggml_conv_depthwise_2d.
    #[napi(catch_unwind, js_name = "convDepthwise2d", ts_args_type = "a: Tensor, b: Tensor, options: Conv2dOptions")]
    pub fn conv_depthwise2d(&self, a: &Tensor, b: &Tensor, options: Option<Conv2dOptions>) -> Result<Tensor> {
        let [s0, s1, p0, p1, d0, d1] = required("convDepthwise2d: options", options)?.ints("convDepthwise2d")?;
        wrap(self.ctx()?.conv_depthwise_2d(a.get()?, b.get()?, s0, s1, p0, p1, d0, d1))
    }
    /// ggml_pool_1d.
    #[napi(catch_unwind, js_name = "pool1d")]
    pub fn pool1d(&self, a: &Tensor, op: PoolOp, k0: f64, s0: f64, p0: f64) -> Result<Tensor> {
        let k0: i32 = int("pool1d: k0", k0)?;
        let s0: i32 = int("pool1d: s0", s0)?;
        let p0: i32 = int("pool1d: p0", p0)?;
        wrap(self.ctx()?.pool_1d(a.get()?, op.to_engine()?, k0, s0, p0))
    }
    /// ggml_pool_2d.
    #[napi(catch_unwind, js_name = "pool2d", ts_args_type = "a: Tensor, op: PoolOp, options: Pool2dOptions")]
    pub fn pool2d(&self, a: &Tensor, op: PoolOp, options: Option<Pool2dOptions>) -> Result<Tensor> {
        let ([k0, k1, s0, s1], p0, p1) = required("pool2d: options", options)?.params("pool2d")?;
        wrap(self.ctx()?.pool_2d(a.get()?, op.to_engine()?, k0, k1, s0, s1, p0, p1))
    }
    /// ggml_pool_2d_back: a = gradient of the pool output, af = the pool's input.
    #[napi(
        catch_unwind,
        js_name = "pool2dBack",
        ts_args_type = "a: Tensor, af: Tensor, op: PoolOp, options: Pool2dOptions"
    )]
    pub fn pool2d_back(&self, a: &Tensor, af: &Tensor, op: PoolOp, options: Option<Pool2dOptions>) -> Result<Tensor> {
        let ([k0, k1, s0, s1], p0, p1) = required("pool2dBack: options", options)?.params("pool2dBack")?;
        let op = op.to_engine()?;
        wrap(self.ctx()?.pool_2d_back(a.get()?, af.get()?, op, k0, k1, s0, s1, p0, p1))
    }
}
