//! JS class Context: ggml's ggml_context (a memory budget tensors and graphs are created
//! against) and every op constructor, named as ggml names them in camelCase
//! (ggml_mul_mat -> ctx.mulMat). Each method only converts arguments and calls the engine,
//! which checks shapes and names the broken condition in its errors. Model ops, convolution
//! and pooling are in context_nn.rs.

use std::sync::Arc;

use crate::args::{boolean, dims, int, required, uint};
use crate::enums::{GgmlType, SortOrder, UnaryOp};
use crate::error::{disposed, IntoJs, Result};
use crate::graph::Graph;
use crate::memory::External;
use crate::options::{AdamwOptions, ContextOptions};
use crate::tensor::Tensor;
use napi::bindgen_prelude::Unknown;
use napi::Env;

#[napi(custom_finalize)]
pub struct Context {
    inner: Option<Arc<weft::Context>>,
    /// The pool ggml allocates at init (weft on the first tensor that needs it), reported
    /// to V8 while this object owns it.
    external: External,
}

crate::memory::release_external_on_finalize!(Context);

pub(crate) fn wrap(r: weft::Result<weft::Tensor>) -> Result<Tensor> {
    r.js().map(Tensor::wrap)
}

pub(crate) fn opt(t: Option<&Tensor>) -> Result<Option<&weft::Tensor>> {
    t.map(|t| t.get()).transpose()
}

/// SET/ACC windows: strides nb1..nb3 and a byte offset, all non-negative.
fn window(what: &str, v: [f64; 4]) -> Result<[usize; 4]> {
    let names = ["nb1", "nb2", "nb3", "offset"];
    let mut out = [0usize; 4];
    for i in 0..4 {
        out[i] = uint(&format!("{what}: {}", names[i]), v[i])?;
    }
    Ok(out)
}

/// Dimensions given as an array: 1 to 4 integers, ne[0] first; missing ones are 1.
pub(crate) fn ne4(what: &str, ne: &[f64]) -> Result<[i64; 4]> {
    if ne.is_empty() || ne.len() > 4 {
        return Err(crate::error::invalid(format!("{what}: {} dims given, 1 to 4 allowed", ne.len())));
    }
    let mut out = [1i64; 4];
    out[..ne.len()].copy_from_slice(&dims(what, ne)?);
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
    pub fn new(env: &Env, options: Option<ContextOptions>) -> Result<Context> {
        let (mem, no_alloc) = options.map_or((None, None), |o| (o.mem_size, o.no_alloc));
        let mem_size = uint("Context: memSize", mem.unwrap_or((16 << 20) as f64))?;
        let no_alloc = no_alloc.unwrap_or(false);
        let ctx = weft::Context::new(weft::ContextParams { mem_size, no_alloc }).js()?;
        let external = if no_alloc { External::default() } else { External::report(env, ctx.mem_size()) };
        Ok(Context { inner: Some(Arc::new(ctx)), external })
    }

    /// ggml_tensor_overhead(): context bytes one tensor object takes.
    #[napi(catch_unwind)]
    pub fn tensor_overhead() -> i64 {
        weft::context::tensor_overhead() as i64
    }

    /// ggml_graph_overhead_custom(size, grads) (defaults: 2048 nodes, no grads).
    #[napi(catch_unwind)]
    pub fn graph_overhead(size: Option<f64>, grads: Option<bool>) -> Result<i64> {
        let size = uint("graphOverhead: size", size.unwrap_or(weft::graph::DEFAULT_GRAPH_SIZE as f64))?;
        Ok(weft::graph::graph_overhead_custom(size, grads.unwrap_or(false)).js()? as i64)
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
    pub fn set_no_alloc(&self, env: &Env, #[napi(ts_arg_type = "boolean")] v: Unknown) -> Result<()> {
        let v = boolean("noAlloc", &v)?;
        let ctx = self.ctx()?;
        ctx.set_no_alloc(v);
        if !v {
            self.external.update(env, ctx.mem_size());
        }
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

    // ---- tensors ----

    /// ggml_new_tensor: `ne` has 1 to 4 dims, ne[0] fastest.
    #[napi(catch_unwind)]
    pub fn new_tensor(&self, ty: GgmlType, ne: Vec<f64>) -> Result<Tensor> {
        let ne4 = ne4("newTensor: ne", &ne)?;
        wrap(self.ctx()?.new_tensor(ty.to_engine()?, &ne4[..ne.len()]))
    }
    #[napi(catch_unwind, js_name = "newTensor1d")]
    pub fn new_tensor1d(&self, ty: GgmlType, ne0: f64) -> Result<Tensor> {
        let ne0: i64 = int("newTensor1d: ne0", ne0)?;
        wrap(self.ctx()?.new_tensor_1d(ty.to_engine()?, ne0))
    }
    #[napi(catch_unwind, js_name = "newTensor2d")]
    pub fn new_tensor2d(&self, ty: GgmlType, ne0: f64, ne1: f64) -> Result<Tensor> {
        let ne0: i64 = int("newTensor2d: ne0", ne0)?;
        let ne1: i64 = int("newTensor2d: ne1", ne1)?;
        wrap(self.ctx()?.new_tensor_2d(ty.to_engine()?, ne0, ne1))
    }
    #[napi(catch_unwind, js_name = "newTensor3d")]
    pub fn new_tensor3d(&self, ty: GgmlType, ne0: f64, ne1: f64, ne2: f64) -> Result<Tensor> {
        let ne0: i64 = int("newTensor3d: ne0", ne0)?;
        let ne1: i64 = int("newTensor3d: ne1", ne1)?;
        let ne2: i64 = int("newTensor3d: ne2", ne2)?;
        wrap(self.ctx()?.new_tensor_3d(ty.to_engine()?, ne0, ne1, ne2))
    }
    #[napi(catch_unwind, js_name = "newTensor4d")]
    pub fn new_tensor4d(&self, ty: GgmlType, ne0: f64, ne1: f64, ne2: f64, ne3: f64) -> Result<Tensor> {
        let ne0: i64 = int("newTensor4d: ne0", ne0)?;
        let ne1: i64 = int("newTensor4d: ne1", ne1)?;
        let ne2: i64 = int("newTensor4d: ne2", ne2)?;
        let ne3: i64 = int("newTensor4d: ne3", ne3)?;
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
    pub fn new_graph_custom(&self, size: f64, grads: Option<bool>) -> Result<Graph> {
        let size = uint("newGraphCustom: size", size)?;
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
    #[napi(catch_unwind, ts_args_type = "gf: Graph, gb: Graph, options: AdamwOptions")]
    pub fn build_opt_adamw(&self, gf: &Graph, gb: &Graph, options: Option<AdamwOptions>) -> Result<()> {
        let p = required("buildOptAdamw: options", options)?.params();
        let forward = gf.snapshot()?;
        let mut backward = gb.lock()?;
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
    pub fn top_k(&self, a: &Tensor, k: f64) -> Result<Tensor> {
        let k: i64 = int("topK: k", k)?;
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
    pub fn group_norm(&self, a: &Tensor, n_groups: f64, eps: f64) -> Result<Tensor> {
        let n_groups: i32 = int("groupNorm: nGroups", n_groups)?;
        wrap(self.ctx()?.group_norm(a.get()?, n_groups, eps as f32, false))
    }
    #[napi(catch_unwind)]
    pub fn group_norm_inplace(&self, a: &Tensor, n_groups: f64, eps: f64) -> Result<Tensor> {
        let n_groups: i32 = int("groupNormInplace: nGroups", n_groups)?;
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
    pub fn diag_mask_inf(&self, a: &Tensor, n_past: f64) -> Result<Tensor> {
        let n_past: i32 = int("diagMaskInf: nPast", n_past)?;
        wrap(self.ctx()?.diag_mask_inf(a.get()?, n_past, false))
    }
    #[napi(catch_unwind)]
    pub fn diag_mask_inf_inplace(&self, a: &Tensor, n_past: f64) -> Result<Tensor> {
        let n_past: i32 = int("diagMaskInfInplace: nPast", n_past)?;
        wrap(self.ctx()?.diag_mask_inf(a.get()?, n_past, true))
    }
    /// ggml_diag_mask_zero.
    #[napi(catch_unwind)]
    pub fn diag_mask_zero(&self, a: &Tensor, n_past: f64) -> Result<Tensor> {
        let n_past: i32 = int("diagMaskZero: nPast", n_past)?;
        wrap(self.ctx()?.diag_mask_zero(a.get()?, n_past, false))
    }
    #[napi(catch_unwind)]
    pub fn diag_mask_zero_inplace(&self, a: &Tensor, n_past: f64) -> Result<Tensor> {
        let n_past: i32 = int("diagMaskZeroInplace: nPast", n_past)?;
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
    pub fn cont1d(&self, a: &Tensor, ne0: f64) -> Result<Tensor> {
        let ne0: i64 = int("cont1d: ne0", ne0)?;
        wrap(self.ctx()?.cont_1d(a.get()?, ne0))
    }
    #[napi(catch_unwind, js_name = "cont2d")]
    pub fn cont2d(&self, a: &Tensor, ne0: f64, ne1: f64) -> Result<Tensor> {
        let ne0: i64 = int("cont2d: ne0", ne0)?;
        let ne1: i64 = int("cont2d: ne1", ne1)?;
        wrap(self.ctx()?.cont_2d(a.get()?, ne0, ne1))
    }
    #[napi(catch_unwind, js_name = "cont3d")]
    pub fn cont3d(&self, a: &Tensor, ne0: f64, ne1: f64, ne2: f64) -> Result<Tensor> {
        let ne0: i64 = int("cont3d: ne0", ne0)?;
        let ne1: i64 = int("cont3d: ne1", ne1)?;
        let ne2: i64 = int("cont3d: ne2", ne2)?;
        wrap(self.ctx()?.cont_3d(a.get()?, ne0, ne1, ne2))
    }
    #[napi(catch_unwind, js_name = "cont4d")]
    pub fn cont4d(&self, a: &Tensor, ne0: f64, ne1: f64, ne2: f64, ne3: f64) -> Result<Tensor> {
        let ne0: i64 = int("cont4d: ne0", ne0)?;
        let ne1: i64 = int("cont4d: ne1", ne1)?;
        let ne2: i64 = int("cont4d: ne2", ne2)?;
        let ne3: i64 = int("cont4d: ne3", ne3)?;
        wrap(self.ctx()?.cont_4d(a.get()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_reshape: view of contiguous a with b's shape.
    #[napi(catch_unwind)]
    pub fn reshape(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.reshape(a.get()?, b.get()?))
    }
    #[napi(catch_unwind, js_name = "reshape1d")]
    pub fn reshape1d(&self, a: &Tensor, ne0: f64) -> Result<Tensor> {
        let ne0: i64 = int("reshape1d: ne0", ne0)?;
        wrap(self.ctx()?.reshape_1d(a.get()?, ne0))
    }
    #[napi(catch_unwind, js_name = "reshape2d")]
    pub fn reshape2d(&self, a: &Tensor, ne0: f64, ne1: f64) -> Result<Tensor> {
        let ne0: i64 = int("reshape2d: ne0", ne0)?;
        let ne1: i64 = int("reshape2d: ne1", ne1)?;
        wrap(self.ctx()?.reshape_2d(a.get()?, ne0, ne1))
    }
    #[napi(catch_unwind, js_name = "reshape3d")]
    pub fn reshape3d(&self, a: &Tensor, ne0: f64, ne1: f64, ne2: f64) -> Result<Tensor> {
        let ne0: i64 = int("reshape3d: ne0", ne0)?;
        let ne1: i64 = int("reshape3d: ne1", ne1)?;
        let ne2: i64 = int("reshape3d: ne2", ne2)?;
        wrap(self.ctx()?.reshape_3d(a.get()?, ne0, ne1, ne2))
    }
    #[napi(catch_unwind, js_name = "reshape4d")]
    pub fn reshape4d(&self, a: &Tensor, ne0: f64, ne1: f64, ne2: f64, ne3: f64) -> Result<Tensor> {
        let ne0: i64 = int("reshape4d: ne0", ne0)?;
        let ne1: i64 = int("reshape4d: ne1", ne1)?;
        let ne2: i64 = int("reshape4d: ne2", ne2)?;
        let ne3: i64 = int("reshape4d: ne3", ne3)?;
        wrap(self.ctx()?.reshape_4d(a.get()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_view_1d: ne0 elements at a byte offset.
    #[napi(catch_unwind, js_name = "view1d")]
    pub fn view1d(&self, a: &Tensor, ne0: f64, offset: f64) -> Result<Tensor> {
        let ne0: i64 = int("view1d: ne0", ne0)?;
        wrap(self.ctx()?.view_1d(a.get()?, ne0, uint("view1d: offset", offset)?))
    }
    /// ggml_view_2d: rows of nb1 bytes.
    #[napi(catch_unwind, js_name = "view2d")]
    pub fn view2d(&self, a: &Tensor, ne0: f64, ne1: f64, nb1: f64, offset: f64) -> Result<Tensor> {
        let ne0: i64 = int("view2d: ne0", ne0)?;
        let ne1: i64 = int("view2d: ne1", ne1)?;
        let nb1 = uint("view2d: nb1", nb1)?;
        wrap(self.ctx()?.view_2d(a.get()?, ne0, ne1, nb1, uint("view2d: offset", offset)?))
    }
    /// ggml_view_3d.
    #[napi(catch_unwind, js_name = "view3d")]
    #[allow(clippy::too_many_arguments)]
    pub fn view3d(&self, a: &Tensor, ne0: f64, ne1: f64, ne2: f64, nb1: f64, nb2: f64, offset: f64) -> Result<Tensor> {
        let ne0: i64 = int("view3d: ne0", ne0)?;
        let ne1: i64 = int("view3d: ne1", ne1)?;
        let ne2: i64 = int("view3d: ne2", ne2)?;
        let (nb1, nb2) = (uint("view3d: nb1", nb1)?, uint("view3d: nb2", nb2)?);
        wrap(self.ctx()?.view_3d(a.get()?, ne0, ne1, ne2, nb1, nb2, uint("view3d: offset", offset)?))
    }
    /// ggml_view_4d.
    #[napi(catch_unwind, js_name = "view4d")]
    #[allow(clippy::too_many_arguments)]
    pub fn view4d(
        &self,
        a: &Tensor,
        ne0: f64,
        ne1: f64,
        ne2: f64,
        ne3: f64,
        nb1: f64,
        nb2: f64,
        nb3: f64,
        offset: f64,
    ) -> Result<Tensor> {
        let ne0: i64 = int("view4d: ne0", ne0)?;
        let ne1: i64 = int("view4d: ne1", ne1)?;
        let ne2: i64 = int("view4d: ne2", ne2)?;
        let ne3: i64 = int("view4d: ne3", ne3)?;
        let (nb1, nb2, nb3) = (uint("view4d: nb1", nb1)?, uint("view4d: nb2", nb2)?, uint("view4d: nb3", nb3)?);
        wrap(self.ctx()?.view_4d(a.get()?, ne0, ne1, ne2, ne3, nb1, nb2, nb3, uint("view4d: offset", offset)?))
    }
    /// ggml_permute: axis i of a becomes axis `axisI` of the result.
    #[napi(catch_unwind)]
    pub fn permute(&self, a: &Tensor, axis0: f64, axis1: f64, axis2: f64, axis3: f64) -> Result<Tensor> {
        let axis0: i32 = int("permute: axis0", axis0)?;
        let axis1: i32 = int("permute: axis1", axis1)?;
        let axis2: i32 = int("permute: axis2", axis2)?;
        let axis3: i32 = int("permute: axis3", axis3)?;
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
    pub fn set(&self, a: &Tensor, b: &Tensor, nb1: f64, nb2: f64, nb3: f64, offset: f64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("set", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.set(a.get()?, b.get()?, n1, n2, n3, o, false))
    }
    /// ggml_set_inplace.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn set_inplace(&self, a: &Tensor, b: &Tensor, nb1: f64, nb2: f64, nb3: f64, offset: f64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("setInplace", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.set(a.get()?, b.get()?, n1, n2, n3, o, true))
    }
    /// ggml_set_1d.
    #[napi(catch_unwind, js_name = "set1d")]
    pub fn set1d(&self, a: &Tensor, b: &Tensor, offset: f64) -> Result<Tensor> {
        wrap(self.ctx()?.set_1d(a.get()?, b.get()?, uint("set1d: offset", offset)?, false))
    }
    /// ggml_set_2d.
    #[napi(catch_unwind, js_name = "set2d")]
    pub fn set2d(&self, a: &Tensor, b: &Tensor, nb1: f64, offset: f64) -> Result<Tensor> {
        let nb1 = uint("set2d: nb1", nb1)?;
        wrap(self.ctx()?.set_2d(a.get()?, b.get()?, nb1, uint("set2d: offset", offset)?, false))
    }
    /// ggml_acc: a copy of a with b added into the window (nb1, nb2, nb3, offset bytes).
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn acc(&self, a: &Tensor, b: &Tensor, nb1: f64, nb2: f64, nb3: f64, offset: f64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("acc", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.acc(a.get()?, b.get()?, n1, n2, n3, o, false))
    }
    /// ggml_acc_inplace.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn acc_inplace(&self, a: &Tensor, b: &Tensor, nb1: f64, nb2: f64, nb3: f64, offset: f64) -> Result<Tensor> {
        let [n1, n2, n3, o] = window("accInplace", [nb1, nb2, nb3, offset])?;
        wrap(self.ctx()?.acc(a.get()?, b.get()?, n1, n2, n3, o, true))
    }
    /// ggml_concat along `dim`.
    #[napi(catch_unwind)]
    pub fn concat(&self, a: &Tensor, b: &Tensor, dim: f64) -> Result<Tensor> {
        let dim: i32 = int("concat: dim", dim)?;
        wrap(self.ctx()?.concat(a.get()?, b.get()?, dim))
    }
    /// ggml_pad: zeros appended to each dim.
    #[napi(catch_unwind)]
    pub fn pad(&self, a: &Tensor, p0: f64, p1: f64, p2: f64, p3: f64) -> Result<Tensor> {
        let p0: i32 = int("pad: p0", p0)?;
        let p1: i32 = int("pad: p1", p1)?;
        let p2: i32 = int("pad: p2", p2)?;
        let p3: i32 = int("pad: p3", p3)?;
        wrap(self.ctx()?.pad(a.get()?, p0, p1, p2, p3))
    }
    /// ggml_upscale: nearest-neighbour, dims 0 and 1 times scaleFactor.
    #[napi(catch_unwind)]
    pub fn upscale(&self, a: &Tensor, scale_factor: f64) -> Result<Tensor> {
        let scale_factor: i32 = int("upscale: scaleFactor", scale_factor)?;
        wrap(self.ctx()?.upscale(a.get()?, scale_factor))
    }
    /// ggml_upscale_ext: nearest-neighbour to the given shape.
    #[napi(catch_unwind)]
    pub fn upscale_ext(&self, a: &Tensor, ne0: f64, ne1: f64, ne2: f64, ne3: f64) -> Result<Tensor> {
        let ne0: i32 = int("upscaleExt: ne0", ne0)?;
        let ne1: i32 = int("upscaleExt: ne1", ne1)?;
        let ne2: i32 = int("upscaleExt: ne2", ne2)?;
        let ne3: i32 = int("upscaleExt: ne3", ne3)?;
        wrap(self.ctx()?.upscale_ext(a.get()?, ne0, ne1, ne2, ne3))
    }
    /// ggml_arange: [start, stop) by step (f32).
    #[napi(catch_unwind)]
    pub fn arange(&self, start: f64, stop: f64, step: f64) -> Result<Tensor> {
        wrap(self.ctx()?.arange(start as f32, stop as f32, step as f32))
    }
    /// ggml_timestep_embedding.
    #[napi(catch_unwind)]
    pub fn timestep_embedding(&self, timesteps: &Tensor, dim: f64, max_period: f64) -> Result<Tensor> {
        let dim: i32 = int("timestepEmbedding: dim", dim)?;
        let max_period: i32 = int("timestepEmbedding: maxPeriod", max_period)?;
        wrap(self.ctx()?.timestep_embedding(timesteps.get()?, dim, max_period))
    }
    /// ggml_win_part (SAM).
    #[napi(catch_unwind)]
    pub fn win_part(&self, a: &Tensor, w: f64) -> Result<Tensor> {
        let w: i32 = int("winPart: w", w)?;
        wrap(self.ctx()?.win_part(a.get()?, w))
    }
    /// ggml_win_unpart (SAM).
    #[napi(catch_unwind)]
    pub fn win_unpart(&self, a: &Tensor, w0: f64, h0: f64, w: f64) -> Result<Tensor> {
        let w0: i32 = int("winUnpart: w0", w0)?;
        let h0: i32 = int("winUnpart: h0", h0)?;
        let w: i32 = int("winUnpart: w", w)?;
        wrap(self.ctx()?.win_unpart(a.get()?, w0, h0, w))
    }
    /// ggml_get_rel_pos (SAM).
    #[napi(catch_unwind)]
    pub fn get_rel_pos(&self, a: &Tensor, qh: f64, kh: f64) -> Result<Tensor> {
        let qh: i32 = int("getRelPos: qh", qh)?;
        let kh: i32 = int("getRelPos: kh", kh)?;
        wrap(self.ctx()?.get_rel_pos(a.get()?, qh, kh))
    }
    /// ggml_add_rel_pos (SAM).
    #[napi(catch_unwind)]
    pub fn add_rel_pos(&self, a: &Tensor, pw: &Tensor, ph: &Tensor) -> Result<Tensor> {
        wrap(self.ctx()?.add_rel_pos(a.get()?, pw.get()?, ph.get()?, false))
    }
}

impl Context {
    fn free(&mut self, env: &Env) -> Result<()> {
        if let Some(c) = &self.inner {
            c.free().js()?;
        }
        self.inner = None;
        self.external.release(env);
        Ok(())
    }
}

disposable!(Context, "ggml_free: release the context's own memory now (tensors whose data lives in it become unusable) and this handle. Throws while a compute uses that memory.", custom);
