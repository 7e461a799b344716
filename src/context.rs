//! JS class Context: ggml's ggml_context (a memory budget tensors and graphs are created
//! against) and every op constructor, named as ggml names them in camelCase
//! (ggml_mul_mat -> ctx.mulMat). Each method only converts arguments and calls the engine,
//! which checks shapes and names the broken condition in its errors.

use std::sync::Arc;

use crate::enums::{GgmlType, PoolOp, Prec, SortOrder, UnaryOp};
use crate::error::{disposed, to_usize, IntoJs, Result};
use crate::graph::Graph;
use crate::tensor::Tensor;
use weft::op::{Im2colParams, RopeParams};

#[napi(object)]
pub struct ContextOptions {
    /// Bytes of the context's memory pool (ggml's mem_size). Default 16 MiB.
    pub mem_size: Option<i64>,
    /// Create tensor objects only, without memory for their data (ggml's no_alloc): use it when
    /// a backend allocates the tensors. Default false, as in ggml.
    pub no_alloc: Option<bool>,
}

#[napi]
pub struct Context {
    inner: Option<Arc<weft::Context>>,
}

fn wrap(r: weft::Result<weft::Tensor>) -> Result<Tensor> {
    r.js().map(Tensor::wrap)
}

fn opt(t: Option<&Tensor>) -> Result<Option<&weft::Tensor>> {
    t.map(|t| t.get()).transpose()
}

/// SET/ACC windows: strides nb1..nb3 and a byte offset, all non-negative.
fn window(what: &str, v: [i64; 4]) -> Result<[usize; 4]> {
    let names = ["nb1", "nb2", "nb3", "offset"];
    let mut out = [0usize; 4];
    for i in 0..4 {
        out[i] = to_usize(&format!("{what}: {}", names[i]), v[i])?;
    }
    Ok(out)
}

fn ne4(what: &str, ne: &[i64]) -> Result<[i64; 4]> {
    if ne.is_empty() || ne.len() > 4 {
        return Err(crate::error::invalid(format!("{what}: {} dims given, 1 to 4 allowed", ne.len())));
    }
    let mut out = [1i64; 4];
    out[..ne.len()].copy_from_slice(ne);
    Ok(out)
}

impl Context {
    pub fn ctx(&self) -> Result<&Arc<weft::Context>> {
        self.inner.as_ref().ok_or_else(|| disposed("Context"))
    }
}

#[napi]
impl Context {
    /// ggml_init.
    #[napi(catch_unwind, constructor)]
    pub fn new(options: Option<ContextOptions>) -> Result<Context> {
        let (mem, no_alloc) = options.map_or((None, None), |o| (o.mem_size, o.no_alloc));
        let mem_size = to_usize("Context: memSize", mem.unwrap_or(16 << 20))?;
        let ctx = weft::Context::new(weft::ContextParams { mem_size, no_alloc: no_alloc.unwrap_or(false) }).js()?;
        Ok(Context { inner: Some(Arc::new(ctx)) })
    }

    /// ggml_tensor_overhead(): context bytes one tensor object takes.
    #[napi(catch_unwind)]
    pub fn tensor_overhead() -> i64 {
        weft::context::tensor_overhead() as i64
    }

    /// ggml_graph_overhead_custom(size, grads) (defaults: 2048 nodes, no grads).
    #[napi(catch_unwind)]
    pub fn graph_overhead(size: Option<i64>, grads: Option<bool>) -> Result<i64> {
        let size = to_usize("graphOverhead: size", size.unwrap_or(weft::graph::DEFAULT_GRAPH_SIZE as i64))?;
        Ok(weft::graph::graph_overhead_custom(size, grads.unwrap_or(false)) as i64)
    }

    #[napi(catch_unwind, getter)]
    pub fn mem_size(&self) -> Result<i64> {
        Ok(self.ctx()?.mem_size() as i64)
    }

    /// ggml_used_mem.
    #[napi(catch_unwind, getter)]
    pub fn used_mem(&self) -> Result<i64> {
        Ok(self.ctx()?.used_mem() as i64)
    }

    #[napi(catch_unwind, getter)]
    pub fn no_alloc(&self) -> Result<bool> {
        Ok(self.ctx()?.no_alloc())
    }

    #[napi(catch_unwind, setter, js_name = "noAlloc")]
    pub fn set_no_alloc(&self, v: bool) -> Result<()> {
        self.ctx()?.set_no_alloc(v);
        Ok(())
    }

    /// Every tensor created in this context, in creation order.
    #[napi(catch_unwind)]
    pub fn tensors(&self) -> Result<Vec<Tensor>> {
        Ok(self.ctx()?.tensors().into_iter().map(Tensor::wrap).collect())
    }

    /// ggml_get_tensor: the first tensor with this name, or null.
    #[napi(catch_unwind)]
    pub fn get_tensor(&self, name: String) -> Result<Option<Tensor>> {
        Ok(self.ctx()?.get_tensor(&name).map(Tensor::wrap))
    }

    /// ggml_get_max_tensor_size.
    #[napi(catch_unwind)]
    pub fn max_tensor_size(&self) -> Result<i64> {
        Ok(self.ctx()?.max_tensor_size() as i64)
    }

    /// ggml_reset: forget all objects (tensors already handed out stay usable).
    #[napi(catch_unwind)]
    pub fn reset(&self) -> Result<()> {
        self.ctx()?.reset();
        Ok(())
    }

    /// ggml_free: release the context's own memory now (tensors whose data lives in it
    /// become unusable) and this handle. Throws while a compute uses that memory.
    #[napi(catch_unwind)]
    pub fn dispose(&mut self) -> Result<()> {
        if let Some(c) = &self.inner {
            c.free().js()?;
        }
        self.inner = None;
        Ok(())
    }

    #[napi(catch_unwind, well_known_symbol = "dispose")]
    pub fn symbol_dispose(&mut self) -> Result<()> {
        self.dispose()
    }

    // ---- tensors ----

    /// ggml_new_tensor: `ne` has 1 to 4 dims, ne[0] fastest.
    #[napi(catch_unwind)]
    pub fn new_tensor(&self, ty: GgmlType, ne: Vec<i64>) -> Result<Tensor> {
        ne4("newTensor", &ne)?;
        wrap(self.ctx()?.new_tensor(ty.to_engine()?, &ne))
    }
    #[napi(catch_unwind, js_name = "newTensor1d")]
    pub fn new_tensor1d(&self, ty: GgmlType, ne0: i64) -> Result<Tensor> {
        wrap(self.ctx()?.new_tensor_1d(ty.to_engine()?, ne0))
    }
    #[napi(catch_unwind, js_name = "newTensor2d")]
    pub fn new_tensor2d(&self, ty: GgmlType, ne0: i64, ne1: i64) -> Result<Tensor> {
        wrap(self.ctx()?.new_tensor_2d(ty.to_engine()?, ne0, ne1))
    }
    #[napi(catch_unwind, js_name = "newTensor3d")]
    pub fn new_tensor3d(&self, ty: GgmlType, ne0: i64, ne1: i64, ne2: i64) -> Result<Tensor> {
        wrap(self.ctx()?.new_tensor_3d(ty.to_engine()?, ne0, ne1, ne2))
    }
    #[napi(catch_unwind, js_name = "newTensor4d")]
    pub fn new_tensor4d(&self, ty: GgmlType, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> Result<Tensor> {
        wrap(self.ctx()?.new_tensor_4d(ty.to_engine()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_dup_tensor: same type and shape, no data copied.
    #[napi(catch_unwind)]
    pub fn dup_tensor(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.dup_tensor(a.get()?))
    }
    /// ggml_view_tensor: a view of all of `a`.
    #[napi(catch_unwind)]
    pub fn view_tensor(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.view_tensor(a.get()?))
    }

    // ---- graphs ----

    /// ggml_new_graph: room for 2048 nodes.
    #[napi(catch_unwind)]
    pub fn new_graph(&self) -> Result<Graph> {
        self.ctx()?.new_graph().js().map(Graph::wrap)
    }
    /// ggml_new_graph_custom. `grads` makes a graph that can take part in autodiff
    /// (buildBackwardExpand's forward graph, reset()).
    #[napi(catch_unwind)]
    pub fn new_graph_custom(&self, size: i64, grads: Option<bool>) -> Result<Graph> {
        let size = to_usize("newGraphCustom: size", size)?;
        self.ctx()?.new_graph_custom(size, grads.unwrap_or(false)).js().map(Graph::wrap)
    }

    /// ggml_graph_dup: a new graph (same size, same grads setting) with g's nodes and leafs.
    #[napi(catch_unwind)]
    pub fn graph_dup(&self, g: &Graph) -> Result<Graph> {
        self.ctx()?.graph_dup(&g.snapshot()?).js().map(Graph::wrap)
    }

    // ---- autodiff ----

    /// ggml_build_backward_expand: give every node of `gf` that depends on a parameter
    /// (setParam) a gradient (`tensor.grad`) and expand `gb` (start it as
    /// ctx.graphDup(gf)) with the nodes computing the parameters' gradients. With
    /// `accumulate`, parameter gradients add up over computes until gb.reset().
    #[napi(catch_unwind)]
    pub fn build_backward_expand(&self, gf: &Graph, gb: &Graph, accumulate: Option<bool>) -> Result<()> {
        // A snapshot of gf, so gf and gb may be the same graph.
        let forward = gf.snapshot()?;
        let mut backward = gb.lock()?;
        self.ctx()?.build_backward_expand(&forward, &mut backward, accumulate.unwrap_or(false)).js()
    }

    /// ggml_build_opt_adamw: expand `gb` with an AdamW step for every parameter of `gf`
    /// (after buildBackwardExpand). Computing gb then updates the parameters in place.
    #[napi(catch_unwind)]
    pub fn build_opt_adamw(&self, gf: &Graph, gb: &Graph, options: AdamwOptions) -> Result<()> {
        let forward = gf.snapshot()?;
        let mut backward = gb.lock()?;
        let p = weft::op::AdamwParams {
            alpha: options.alpha as f32,
            beta1: options.beta1 as f32,
            beta2: options.beta2 as f32,
            eps: options.eps as f32,
            wd: options.wd as f32,
        };
        self.ctx()?.build_opt_adamw(&forward, &mut backward, p).js()
    }
}

// Docs are `#[doc = "..."]` literals rather than `///` comments: napi-derive copies a doc
// attribute's token text into index.d.ts, and a `///` comment passed through a macro becomes
// the raw string `r" ..."`, whose `r"` would be copied along.
/// Methods `f(a, b)` and `fInplace(a, b)` for broadcasting binary ops.
macro_rules! binary_methods {
    ($( #[doc = $doc:literal] $f:ident, $fi:ident; )*) => {
        #[napi]
        impl Context {
            $(
                #[doc = $doc]
                #[napi(catch_unwind)]
                pub fn $f(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
                    wrap(self.ctx()?.$f(a.get()?, b.get()?))
                }
                #[doc = $doc]
                #[napi(catch_unwind)]
                pub fn $fi(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
                    wrap(self.ctx()?.$fi(a.get()?, b.get()?))
                }
            )*
        }
    };
}

binary_methods! {
    #[doc = "ggml_add: a + b, b broadcast over a."]
    add, add_inplace;
    #[doc = "ggml_sub: a - b, b broadcast over a."]
    sub, sub_inplace;
    #[doc = "ggml_mul: a * b elementwise, b broadcast over a."]
    mul, mul_inplace;
    #[doc = "ggml_div: a / b elementwise, b broadcast over a."]
    div, div_inplace;
    #[doc = "ggml_add1: a + scalar b."]
    add1, add1_inplace;
}

/// Methods `f(a)` and `fInplace(a)` for elementwise ops without params.
macro_rules! unary_methods {
    ($( #[doc = $doc:literal] $f:ident, $fi:ident; )*) => {
        #[napi]
        impl Context {
            $(
                #[doc = $doc]
                #[napi(catch_unwind)]
                pub fn $f(&self, a: &Tensor) -> Result<Tensor> {
                    wrap(self.ctx()?.$f(a.get()?))
                }
                #[doc = $doc]
                #[napi(catch_unwind)]
                pub fn $fi(&self, a: &Tensor) -> Result<Tensor> {
                    wrap(self.ctx()?.$fi(a.get()?))
                }
            )*
        }
    };
}

unary_methods! {
    #[doc = "ggml_dup: a copy of a."]
    dup, dup_inplace;
    #[doc = "ggml_sqr: x^2."]
    sqr, sqr_inplace;
    #[doc = "ggml_sqrt."]
    sqrt, sqrt_inplace;
    #[doc = "ggml_log: natural log."]
    log, log_inplace;
    #[doc = "ggml_sin."]
    sin, sin_inplace;
    #[doc = "ggml_cos."]
    cos, cos_inplace;
    #[doc = "ggml_abs."]
    abs, abs_inplace;
    #[doc = "ggml_sgn: -1, 0 or 1."]
    sgn, sgn_inplace;
    #[doc = "ggml_neg."]
    neg, neg_inplace;
    #[doc = "ggml_step: 1 where x > 0."]
    step, step_inplace;
    #[doc = "ggml_tanh."]
    tanh, tanh_inplace;
    #[doc = "ggml_elu."]
    elu, elu_inplace;
    #[doc = "ggml_relu."]
    relu, relu_inplace;
    #[doc = "ggml_sigmoid."]
    sigmoid, sigmoid_inplace;
    #[doc = "ggml_gelu (tanh approximation, through ggml's f16 table on CPU)."]
    gelu, gelu_inplace;
    #[doc = "ggml_gelu_quick: x * sigmoid(1.702 x)."]
    gelu_quick, gelu_quick_inplace;
    #[doc = "ggml_silu: x * sigmoid(x)."]
    silu, silu_inplace;
    #[doc = "ggml_hardswish."]
    hardswish, hardswish_inplace;
    #[doc = "ggml_hardsigmoid."]
    hardsigmoid, hardsigmoid_inplace;
    #[doc = "ggml_exp."]
    exp, exp_inplace;
}

#[napi(object)]
pub struct RopeOptions {
    /// Rotated dims (n_dims); default a.ne[0].
    pub n_dims: Option<i32>,
    /// 0 = normal, 2 = GPT-NeoX (ggml's GGML_ROPE_TYPE_NEOX). Default 0.
    #[napi(ts_type = "0 | 2")]
    pub mode: Option<i32>,
    pub n_ctx_orig: Option<i32>,
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
    fn params(o: Option<RopeOptions>, a: &weft::Tensor) -> RopeParams {
        let o = o.unwrap_or(RopeOptions {
            n_dims: None,
            mode: None,
            n_ctx_orig: None,
            freq_base: None,
            freq_scale: None,
            ext_factor: None,
            attn_factor: None,
            beta_fast: None,
            beta_slow: None,
        });
        RopeParams {
            n_dims: o.n_dims.unwrap_or(a.ne()[0] as i32),
            mode: o.mode.unwrap_or(0),
            n_ctx_orig: o.n_ctx_orig.unwrap_or(0),
            freq_base: o.freq_base.unwrap_or(10000.0) as f32,
            freq_scale: o.freq_scale.unwrap_or(1.0) as f32,
            ext_factor: o.ext_factor.unwrap_or(0.0) as f32,
            attn_factor: o.attn_factor.unwrap_or(1.0) as f32,
            beta_fast: o.beta_fast.unwrap_or(32.0) as f32,
            beta_slow: o.beta_slow.unwrap_or(1.0) as f32,
        }
    }
}

#[napi(object, js_name = "Im2colOptions")]
pub struct Im2colOptions {
    pub s0: i32,
    pub s1: Option<i32>,
    pub p0: i32,
    pub p1: Option<i32>,
    pub d0: i32,
    pub d1: Option<i32>,
    #[napi(js_name = "is2D")]
    pub is_2d: bool,
    /// Output type, 'f32' or 'f16'. Default 'f32'.
    pub dst_type: Option<GgmlType>,
}

impl Im2colOptions {
    fn params(&self) -> Im2colParams {
        Im2colParams {
            s0: self.s0,
            s1: self.s1.unwrap_or(0),
            p0: self.p0,
            p1: self.p1.unwrap_or(0),
            d0: self.d0,
            d1: self.d1.unwrap_or(0),
            is_2d: self.is_2d,
        }
    }
}

#[napi(object, js_name = "Conv2dOptions")]
pub struct Conv2dOptions {
    pub s0: i32,
    pub s1: i32,
    pub p0: i32,
    pub p1: i32,
    pub d0: i32,
    pub d1: i32,
}

#[napi(object, js_name = "Pool2dOptions")]
pub struct Pool2dOptions {
    pub k0: i32,
    pub k1: i32,
    pub s0: i32,
    pub s1: i32,
    pub p0: f64,
    pub p1: f64,
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

#[napi]
impl Context {
    /// ggml_add_cast: a + b computed into type `ty`.
    #[napi(catch_unwind)]
    pub fn add_cast(&self, a: &Tensor, b: &Tensor, ty: GgmlType) -> Result<Tensor> {
        wrap(self.ctx()?.add_cast(a.get()?, b.get()?, ty.to_engine()?))
    }

    /// ggml_unary: any of the unary ops by name ('GELU', 'SILU', ...).
    #[napi(catch_unwind)]
    pub fn unary(&self, a: &Tensor, op: UnaryOp) -> Result<Tensor> {
        wrap(self.ctx()?.unary(a.get()?, op.to_engine()?, false))
    }
    #[napi(catch_unwind)]
    pub fn unary_inplace(&self, a: &Tensor, op: UnaryOp) -> Result<Tensor> {
        wrap(self.ctx()?.unary(a.get()?, op.to_engine()?, true))
    }

    /// ggml_leaky_relu.
    #[napi(catch_unwind)]
    pub fn leaky_relu(&self, a: &Tensor, negative_slope: f64, inplace: Option<bool>) -> Result<Tensor> {
        wrap(self.ctx()?.leaky_relu(a.get()?, negative_slope as f32, inplace.unwrap_or(false)))
    }

    /// ggml_scale: a * s.
    #[napi(catch_unwind)]
    pub fn scale(&self, a: &Tensor, s: f64) -> Result<Tensor> {
        wrap(self.ctx()?.scale(a.get()?, s as f32))
    }
    #[napi(catch_unwind)]
    pub fn scale_inplace(&self, a: &Tensor, s: f64) -> Result<Tensor> {
        wrap(self.ctx()?.scale_inplace(a.get()?, s as f32))
    }

    /// ggml_clamp (in place, as in ggml).
    #[napi(catch_unwind)]
    pub fn clamp(&self, a: &Tensor, min: f64, max: f64) -> Result<Tensor> {
        wrap(self.ctx()?.clamp(a.get()?, min as f32, max as f32))
    }

    /// ggml_silu_back: a = x, b = dy.
    #[napi(catch_unwind)]
    pub fn silu_back(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.silu_back(a.get()?, b.get()?))
    }

    // ---- reductions, norms, softmax ----

    /// ggml_sum: sum of all elements.
    #[napi(catch_unwind)]
    pub fn sum(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.sum(a.get()?))
    }
    /// ggml_sum_rows: [a,b,c,d] -> [1,b,c,d].
    #[napi(catch_unwind)]
    pub fn sum_rows(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.sum_rows(a.get()?))
    }
    /// ggml_mean: row means.
    #[napi(catch_unwind)]
    pub fn mean(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.mean(a.get()?))
    }
    /// ggml_argmax: index of each row's maximum (i32).
    #[napi(catch_unwind)]
    pub fn argmax(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.argmax(a.get()?))
    }
    /// ggml_count_equal: number of equal elements (i64 scalar).
    #[napi(catch_unwind)]
    pub fn count_equal(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.count_equal(a.get()?, b.get()?))
    }
    /// ggml_repeat: tile a to b's shape.
    #[napi(catch_unwind)]
    pub fn repeat(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.repeat(a.get()?, b.get()?))
    }
    /// ggml_repeat_back: sum a's repetitions into b's shape.
    #[napi(catch_unwind)]
    pub fn repeat_back(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.repeat_back(a.get()?, b.get()?))
    }
    /// ggml_argsort: per-row sort permutation (i32).
    #[napi(catch_unwind)]
    pub fn argsort(&self, a: &Tensor, order: SortOrder) -> Result<Tensor> {
        wrap(self.ctx()?.argsort(a.get()?, order.to_engine()?))
    }
    /// ggml_top_k: indices of each row's k largest.
    #[napi(catch_unwind)]
    pub fn top_k(&self, a: &Tensor, k: i64) -> Result<Tensor> {
        wrap(self.ctx()?.top_k(a.get()?, k))
    }
    /// ggml_norm: (x - mean) / sqrt(var + eps) along rows.
    #[napi(catch_unwind)]
    pub fn norm(&self, a: &Tensor, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.norm(a.get()?, eps as f32, false))
    }
    #[napi(catch_unwind)]
    pub fn norm_inplace(&self, a: &Tensor, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.norm(a.get()?, eps as f32, true))
    }
    /// ggml_rms_norm: x / sqrt(mean(x^2) + eps) along rows.
    #[napi(catch_unwind)]
    pub fn rms_norm(&self, a: &Tensor, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.rms_norm(a.get()?, eps as f32, false))
    }
    #[napi(catch_unwind)]
    pub fn rms_norm_inplace(&self, a: &Tensor, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.rms_norm(a.get()?, eps as f32, true))
    }
    /// ggml_rms_norm_back: a = x, b = dy.
    #[napi(catch_unwind)]
    pub fn rms_norm_back(&self, a: &Tensor, b: &Tensor, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.rms_norm_back(a.get()?, b.get()?, eps as f32))
    }
    /// ggml_group_norm.
    #[napi(catch_unwind)]
    pub fn group_norm(&self, a: &Tensor, n_groups: i32, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.group_norm(a.get()?, n_groups, eps as f32, false))
    }
    #[napi(catch_unwind)]
    pub fn group_norm_inplace(&self, a: &Tensor, n_groups: i32, eps: f64) -> Result<Tensor> {
        wrap(self.ctx()?.group_norm(a.get()?, n_groups, eps as f32, true))
    }
    /// ggml_soft_max along rows.
    #[napi(catch_unwind)]
    pub fn soft_max(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.soft_max(a.get()?))
    }
    #[napi(catch_unwind)]
    pub fn soft_max_inplace(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.soft_max_inplace(a.get()?))
    }
    /// ggml_soft_max_ext: softmax(a*scale + mask*slope), ALiBi slopes when maxBias > 0.
    #[napi(catch_unwind)]
    pub fn soft_max_ext(&self, a: &Tensor, mask: Option<&Tensor>, scale: f64, max_bias: f64) -> Result<Tensor> {
        wrap(self.ctx()?.soft_max_ext(a.get()?, opt(mask)?, scale as f32, max_bias as f32))
    }
    /// ggml_soft_max_back: a = dy, b = y.
    #[napi(catch_unwind)]
    pub fn soft_max_back(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.soft_max_back(a.get()?, b.get()?, false))
    }
    /// ggml_diag_mask_inf: -inf above the diagonal shifted by nPast.
    #[napi(catch_unwind)]
    pub fn diag_mask_inf(&self, a: &Tensor, n_past: i32) -> Result<Tensor> {
        wrap(self.ctx()?.diag_mask_inf(a.get()?, n_past, false))
    }
    #[napi(catch_unwind)]
    pub fn diag_mask_inf_inplace(&self, a: &Tensor, n_past: i32) -> Result<Tensor> {
        wrap(self.ctx()?.diag_mask_inf(a.get()?, n_past, true))
    }
    /// ggml_diag_mask_zero.
    #[napi(catch_unwind)]
    pub fn diag_mask_zero(&self, a: &Tensor, n_past: i32) -> Result<Tensor> {
        wrap(self.ctx()?.diag_mask_zero(a.get()?, n_past, false))
    }
    #[napi(catch_unwind)]
    pub fn diag_mask_zero_inplace(&self, a: &Tensor, n_past: i32) -> Result<Tensor> {
        wrap(self.ctx()?.diag_mask_zero(a.get()?, n_past, true))
    }
    /// ggml_cross_entropy_loss: a = logits, b = labels.
    #[napi(catch_unwind)]
    pub fn cross_entropy_loss(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.cross_entropy_loss(a.get()?, b.get()?))
    }
    /// ggml_cross_entropy_loss_back.
    #[napi(catch_unwind)]
    pub fn cross_entropy_loss_back(&self, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.cross_entropy_loss_back(a.get()?, b.get()?, c.get()?))
    }

    // ---- copies, views, layout ----

    /// ggml_cpy: copy a into b (converting type); returns a view of b.
    #[napi(catch_unwind)]
    pub fn cpy(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.cpy(a.get()?, b.get()?))
    }
    /// ggml_cast: a converted to another type.
    #[napi(catch_unwind)]
    pub fn cast(&self, a: &Tensor, ty: GgmlType) -> Result<Tensor> {
        wrap(self.ctx()?.cast(a.get()?, ty.to_engine()?))
    }
    /// ggml_cont: a contiguous copy.
    #[napi(catch_unwind)]
    pub fn cont(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.cont(a.get()?))
    }
    #[napi(catch_unwind, js_name = "cont1d")]
    pub fn cont1d(&self, a: &Tensor, ne0: i64) -> Result<Tensor> {
        wrap(self.ctx()?.cont_1d(a.get()?, ne0))
    }
    #[napi(catch_unwind, js_name = "cont2d")]
    pub fn cont2d(&self, a: &Tensor, ne0: i64, ne1: i64) -> Result<Tensor> {
        wrap(self.ctx()?.cont_2d(a.get()?, ne0, ne1))
    }
    #[napi(catch_unwind, js_name = "cont3d")]
    pub fn cont3d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64) -> Result<Tensor> {
        wrap(self.ctx()?.cont_3d(a.get()?, ne0, ne1, ne2))
    }
    #[napi(catch_unwind, js_name = "cont4d")]
    pub fn cont4d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> Result<Tensor> {
        wrap(self.ctx()?.cont_4d(a.get()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_reshape: view of contiguous a with b's shape.
    #[napi(catch_unwind)]
    pub fn reshape(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.reshape(a.get()?, b.get()?))
    }
    #[napi(catch_unwind, js_name = "reshape1d")]
    pub fn reshape1d(&self, a: &Tensor, ne0: i64) -> Result<Tensor> {
        wrap(self.ctx()?.reshape_1d(a.get()?, ne0))
    }
    #[napi(catch_unwind, js_name = "reshape2d")]
    pub fn reshape2d(&self, a: &Tensor, ne0: i64, ne1: i64) -> Result<Tensor> {
        wrap(self.ctx()?.reshape_2d(a.get()?, ne0, ne1))
    }
    #[napi(catch_unwind, js_name = "reshape3d")]
    pub fn reshape3d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64) -> Result<Tensor> {
        wrap(self.ctx()?.reshape_3d(a.get()?, ne0, ne1, ne2))
    }
    #[napi(catch_unwind, js_name = "reshape4d")]
    pub fn reshape4d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64, ne3: i64) -> Result<Tensor> {
        wrap(self.ctx()?.reshape_4d(a.get()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_view_1d: ne0 elements at a byte offset.
    #[napi(catch_unwind, js_name = "view1d")]
    pub fn view1d(&self, a: &Tensor, ne0: i64, offset: i64) -> Result<Tensor> {
        wrap(self.ctx()?.view_1d(a.get()?, ne0, to_usize("view1d: offset", offset)?))
    }
    /// ggml_view_2d: rows of nb1 bytes.
    #[napi(catch_unwind, js_name = "view2d")]
    pub fn view2d(&self, a: &Tensor, ne0: i64, ne1: i64, nb1: i64, offset: i64) -> Result<Tensor> {
        let nb1 = to_usize("view2d: nb1", nb1)?;
        wrap(self.ctx()?.view_2d(a.get()?, ne0, ne1, nb1, to_usize("view2d: offset", offset)?))
    }
    /// ggml_view_3d.
    #[napi(catch_unwind, js_name = "view3d")]
    #[allow(clippy::too_many_arguments)]
    pub fn view3d(&self, a: &Tensor, ne0: i64, ne1: i64, ne2: i64, nb1: i64, nb2: i64, offset: i64) -> Result<Tensor> {
        let (nb1, nb2) = (to_usize("view3d: nb1", nb1)?, to_usize("view3d: nb2", nb2)?);
        wrap(self.ctx()?.view_3d(a.get()?, ne0, ne1, ne2, nb1, nb2, to_usize("view3d: offset", offset)?))
    }
    /// ggml_view_4d.
    #[napi(catch_unwind, js_name = "view4d")]
    #[allow(clippy::too_many_arguments)]
    pub fn view4d(
        &self,
        a: &Tensor,
        ne0: i64,
        ne1: i64,
        ne2: i64,
        ne3: i64,
        nb1: i64,
        nb2: i64,
        nb3: i64,
        offset: i64,
    ) -> Result<Tensor> {
        let (nb1, nb2, nb3) =
            (to_usize("view4d: nb1", nb1)?, to_usize("view4d: nb2", nb2)?, to_usize("view4d: nb3", nb3)?);
        wrap(self.ctx()?.view_4d(a.get()?, ne0, ne1, ne2, ne3, nb1, nb2, nb3, to_usize("view4d: offset", offset)?))
    }
    /// ggml_permute: axis i of a becomes axis `axisI` of the result.
    #[napi(catch_unwind)]
    pub fn permute(&self, a: &Tensor, axis0: i32, axis1: i32, axis2: i32, axis3: i32) -> Result<Tensor> {
        wrap(self.ctx()?.permute(a.get()?, [axis0, axis1, axis2, axis3]))
    }
    /// ggml_transpose: swap dims 0 and 1.
    #[napi(catch_unwind)]
    pub fn transpose(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.transpose(a.get()?))
    }
    /// ggml_get_rows: rows of a picked by the i32 indices in b.
    #[napi(catch_unwind)]
    pub fn get_rows(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.get_rows(a.get()?, b.get()?))
    }
    /// ggml_get_rows_back.
    #[napi(catch_unwind)]
    pub fn get_rows_back(&self, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.get_rows_back(a.get()?, b.get()?, c.get()?))
    }
    /// ggml_diag.
    #[napi(catch_unwind)]
    pub fn diag(&self, a: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.diag(a.get()?))
    }
    /// ggml_set: b written into the window (nb1, nb2, nb3, offset bytes) of a copy of a.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn set(&self, a: &Tensor, b: &Tensor, nb1: i64, nb2: i64, nb3: i64, offset: i64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("set", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.set(a.get()?, b.get()?, n1, n2, n3, o, false))
    }
    /// ggml_set_inplace.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn set_inplace(&self, a: &Tensor, b: &Tensor, nb1: i64, nb2: i64, nb3: i64, offset: i64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("setInplace", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.set(a.get()?, b.get()?, n1, n2, n3, o, true))
    }
    /// ggml_set_1d.
    #[napi(catch_unwind, js_name = "set1d")]
    pub fn set1d(&self, a: &Tensor, b: &Tensor, offset: i64) -> Result<Tensor> {
        wrap(self.ctx()?.set_1d(a.get()?, b.get()?, to_usize("set1d: offset", offset)?, false))
    }
    /// ggml_set_2d.
    #[napi(catch_unwind, js_name = "set2d")]
    pub fn set2d(&self, a: &Tensor, b: &Tensor, nb1: i64, offset: i64) -> Result<Tensor> {
        let nb1 = to_usize("set2d: nb1", nb1)?;
        wrap(self.ctx()?.set_2d(a.get()?, b.get()?, nb1, to_usize("set2d: offset", offset)?, false))
    }
    /// ggml_acc: a copy of a with b added into the window (nb1, nb2, nb3, offset bytes).
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn acc(&self, a: &Tensor, b: &Tensor, nb1: i64, nb2: i64, nb3: i64, offset: i64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("acc", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.acc(a.get()?, b.get()?, n1, n2, n3, o, false))
    }
    /// ggml_acc_inplace.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn acc_inplace(&self, a: &Tensor, b: &Tensor, nb1: i64, nb2: i64, nb3: i64, offset: i64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("accInplace", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.acc(a.get()?, b.get()?, n1, n2, n3, o, true))
    }
    /// ggml_concat along `dim`.
    #[napi(catch_unwind)]
    pub fn concat(&self, a: &Tensor, b: &Tensor, dim: i32) -> Result<Tensor> {
        wrap(self.ctx()?.concat(a.get()?, b.get()?, dim))
    }
    /// ggml_pad: zeros appended to each dim.
    #[napi(catch_unwind)]
    pub fn pad(&self, a: &Tensor, p0: i32, p1: i32, p2: i32, p3: i32) -> Result<Tensor> {
        wrap(self.ctx()?.pad(a.get()?, p0, p1, p2, p3))
    }
    /// ggml_upscale: nearest-neighbour, dims 0 and 1 times scaleFactor.
    #[napi(catch_unwind)]
    pub fn upscale(&self, a: &Tensor, scale_factor: i32) -> Result<Tensor> {
        wrap(self.ctx()?.upscale(a.get()?, scale_factor))
    }
    /// ggml_upscale_ext: nearest-neighbour to the given shape.
    #[napi(catch_unwind)]
    pub fn upscale_ext(&self, a: &Tensor, ne0: i32, ne1: i32, ne2: i32, ne3: i32) -> Result<Tensor> {
        wrap(self.ctx()?.upscale_ext(a.get()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_arange: [start, stop) by step (f32).
    #[napi(catch_unwind)]
    pub fn arange(&self, start: f64, stop: f64, step: f64) -> Result<Tensor> {
        wrap(self.ctx()?.arange(start as f32, stop as f32, step as f32))
    }
    /// ggml_timestep_embedding.
    #[napi(catch_unwind)]
    pub fn timestep_embedding(&self, timesteps: &Tensor, dim: i32, max_period: i32) -> Result<Tensor> {
        wrap(self.ctx()?.timestep_embedding(timesteps.get()?, dim, max_period))
    }
    /// ggml_win_part (SAM).
    #[napi(catch_unwind)]
    pub fn win_part(&self, a: &Tensor, w: i32) -> Result<Tensor> {
        wrap(self.ctx()?.win_part(a.get()?, w))
    }
    /// ggml_win_unpart (SAM).
    #[napi(catch_unwind)]
    pub fn win_unpart(&self, a: &Tensor, w0: i32, h0: i32, w: i32) -> Result<Tensor> {
        wrap(self.ctx()?.win_unpart(a.get()?, w0, h0, w))
    }
    /// ggml_get_rel_pos (SAM).
    #[napi(catch_unwind)]
    pub fn get_rel_pos(&self, a: &Tensor, qh: i32, kh: i32) -> Result<Tensor> {
        wrap(self.ctx()?.get_rel_pos(a.get()?, qh, kh))
    }
    /// ggml_add_rel_pos (SAM).
    #[napi(catch_unwind)]
    pub fn add_rel_pos(&self, a: &Tensor, pw: &Tensor, ph: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.add_rel_pos(a.get()?, pw.get()?, ph.get()?, false))
    }

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
    pub fn rope(&self, a: &Tensor, b: &Tensor, n_dims: i32, mode: i32) -> Result<Tensor> {
        let p = RopeParams { n_dims, mode, beta_fast: 0.0, beta_slow: 0.0, ..RopeOptions::params(None, a.get()?) };
        wrap(self.ctx()?.rope_ext(a.get()?, b.get()?, None, p, false))
    }
    /// ggml_rope_ext: rotary embedding with positions b (i32) and optional frequency factors c.
    #[napi(catch_unwind)]
    pub fn rope_ext(&self, a: &Tensor, b: &Tensor, c: Option<&Tensor>, options: Option<RopeOptions>) -> Result<Tensor> {
        let p = RopeOptions::params(options, a.get()?);
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
        let p = RopeOptions::params(options, a.get()?);
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
        let p = RopeOptions::params(options, a.get()?);
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
    #[napi(catch_unwind)]
    pub fn opt_step_adamw(&self, a: &Tensor, grad: &Tensor, options: AdamwOptions) -> Result<Tensor> {
        let o = options;
        wrap(self.ctx()?.opt_step_adamw(
            a.get()?,
            grad.get()?,
            o.alpha as f32,
            o.beta1 as f32,
            o.beta2 as f32,
            o.eps as f32,
            o.wd as f32,
        ))
    }

    // ---- convolution and pooling ----

    /// ggml_conv_transpose_1d.
    #[napi(catch_unwind, js_name = "convTranspose1d")]
    pub fn conv_transpose1d(&self, a: &Tensor, b: &Tensor, s0: i32, p0: i32, d0: i32) -> Result<Tensor> {
        wrap(self.ctx()?.conv_transpose_1d(a.get()?, b.get()?, s0, p0, d0))
    }
    /// ggml_conv_transpose_2d_p0.
    #[napi(catch_unwind, js_name = "convTranspose2dP0")]
    pub fn conv_transpose2d_p0(&self, a: &Tensor, b: &Tensor, stride: i32) -> Result<Tensor> {
        wrap(self.ctx()?.conv_transpose_2d_p0(a.get()?, b.get()?, stride))
    }
    /// ggml_im2col: unfold b's patches for a conv with kernel a.
    #[napi(catch_unwind, js_name = "im2col")]
    pub fn im2col(&self, a: &Tensor, b: &Tensor, options: Im2colOptions) -> Result<Tensor> {
        let dst = options.dst_type.unwrap_or(GgmlType::F32).to_engine()?;
        wrap(self.ctx()?.im2col(a.get()?, b.get()?, options.params(), dst))
    }
    /// ggml_im2col_back: fold gradients b back into an input of shape `ne`.
    #[napi(catch_unwind, js_name = "im2colBack")]
    pub fn im2col_back(&self, a: &Tensor, b: &Tensor, ne: Vec<i64>, options: Im2colOptions) -> Result<Tensor> {
        let ne = ne4("im2colBack", &ne)?;
        wrap(self.ctx()?.im2col_back(a.get()?, b.get()?, ne, options.params()))
    }
    /// ggml_conv_1d (im2col + mul_mat).
    #[napi(catch_unwind, js_name = "conv1d")]
    pub fn conv1d(&self, a: &Tensor, b: &Tensor, s0: i32, p0: i32, d0: i32) -> Result<Tensor> {
        wrap(self.ctx()?.conv_1d(a.get()?, b.get()?, s0, p0, d0))
    }
    /// ggml_conv_1d_ph: half padding.
    #[napi(catch_unwind, js_name = "conv1dPh")]
    pub fn conv1d_ph(&self, a: &Tensor, b: &Tensor, s: i32, d: i32) -> Result<Tensor> {
        wrap(self.ctx()?.conv_1d_ph(a.get()?, b.get()?, s, d))
    }
    /// ggml_conv_2d (im2col + mul_mat).
    #[napi(catch_unwind, js_name = "conv2d")]
    pub fn conv2d(&self, a: &Tensor, b: &Tensor, options: Conv2dOptions) -> Result<Tensor> {
        let o = options;
        wrap(self.ctx()?.conv_2d(a.get()?, b.get()?, o.s0, o.s1, o.p0, o.p1, o.d0, o.d1))
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
    #[napi(catch_unwind, js_name = "convDepthwise2d")]
    pub fn conv_depthwise2d(&self, a: &Tensor, b: &Tensor, options: Conv2dOptions) -> Result<Tensor> {
        let o = options;
        wrap(self.ctx()?.conv_depthwise_2d(a.get()?, b.get()?, o.s0, o.s1, o.p0, o.p1, o.d0, o.d1))
    }
    /// ggml_pool_1d.
    #[napi(catch_unwind, js_name = "pool1d")]
    pub fn pool1d(&self, a: &Tensor, op: PoolOp, k0: i32, s0: i32, p0: i32) -> Result<Tensor> {
        wrap(self.ctx()?.pool_1d(a.get()?, op.to_engine()?, k0, s0, p0))
    }
    /// ggml_pool_2d.
    #[napi(catch_unwind, js_name = "pool2d")]
    pub fn pool2d(&self, a: &Tensor, op: PoolOp, options: Pool2dOptions) -> Result<Tensor> {
        let o = options;
        wrap(self.ctx()?.pool_2d(a.get()?, op.to_engine()?, o.k0, o.k1, o.s0, o.s1, o.p0 as f32, o.p1 as f32))
    }
    /// ggml_pool_2d_back: a = gradient of the pool output, af = the pool's input.
    #[napi(catch_unwind, js_name = "pool2dBack")]
    pub fn pool2d_back(&self, a: &Tensor, af: &Tensor, op: PoolOp, options: Pool2dOptions) -> Result<Tensor> {
        let o = options;
        let op = op.to_engine()?;
        wrap(self.ctx()?.pool_2d_back(a.get()?, af.get()?, op, o.k0, o.k1, o.s0, o.s1, o.p0 as f32, o.p1 as f32))
    }
}
