//! Constructors of the matrix and model ops: mul_mat, mul_mat_id, out_prod, rope,
//! flash attention, the state-space and RWKV ops, and the AdamW step.

use super::build_basic::Out;
use crate::context::{pad, Context};
use crate::op::{Op, Prec, RopeParams};
use crate::tensor::{flags, fmt_shape, Tensor};
use crate::types::Type;
use crate::{ensure, Result};

/// ggml's `GGML_KQ_MASK_PAD`: flash attention masks are padded to this many rows.
pub const KQ_MASK_PAD: i64 = 32;

impl Context {
    /// ggml_mul_mat: a [k, n, ...] times b [k, m, ...] -> [n, m, ...]; a broadcasts over
    /// dims 2 and 3 of b.
    pub fn mul_mat(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let (an, bn) = (a.ne(), b.ne());
        ensure!(an[0] == bn[0], "mulMat: a.ne[0]={} must equal b.ne[0]={}", an[0], bn[0]);
        ensure!(an[2] > 0 && bn[2] % an[2] == 0, "mulMat: b.ne[2]={} must be a multiple of a.ne[2]={}", bn[2], an[2]);
        ensure!(an[3] > 0 && bn[3] % an[3] == 0, "mulMat: b.ne[3]={} must be a multiple of a.ne[3]={}", bn[3], an[3]);
        ensure!(!a.is_transposed(), "mulMat: a must not be transposed (a.nb[0]={} > a.nb[1]={})", a.nb()[0], a.nb()[1]);
        let ne = [an[1], bn[1], bn[2], bn[3]];
        self.op_node(
            "mulMat",
            Out::New(Type::F32, ne),
            Op::MulMat { prec: Prec::Default },
            vec![Some(a.clone()), Some(b.clone())],
        )
    }

    /// ggml_mul_mat_set_prec.
    pub fn mul_mat_set_prec(&self, t: &Tensor, prec: Prec) -> Result<()> {
        ensure!(matches!(t.op(), Op::MulMat { .. }), "mulMatSetPrec: tensor is {}, not MUL_MAT", t.op().name());
        t.set_op(Op::MulMat { prec })
    }

    /// ggml_mul_mat_id: per token, multiply b by the experts of `as` that `ids` picks.
    /// as [k, n, n_expert], b [k, n_used_b, n_tokens], ids i32 [n_used, n_tokens].
    pub fn mul_mat_id(&self, as_: &Tensor, b: &Tensor, ids: &Tensor) -> Result<Tensor> {
        let what = "mulMatId";
        let (an, bn, idn) = (as_.ne(), b.ne(), ids.ne());
        ensure!(!as_.is_transposed(), "{what}: as must not be transposed");
        ensure!(ids.ty() == Type::I32, "{what}: ids.type={} must be i32", ids.ty());
        ensure!(an[3] == 1, "{what}: as.ne[3]={} must be 1 (one matrix per expert)", an[3]);
        ensure!(bn[3] == 1, "{what}: b.ne[3]={} must be 1", bn[3]);
        ensure!(idn[2] == 1 && idn[3] == 1, "{what}: ids must be 2-D, got {}", fmt_shape(&idn));
        ensure!(idn[1] == bn[2], "{what}: ids.ne[1]={} must equal b.ne[2]={}", idn[1], bn[2]);
        ensure!(an[0] == bn[0], "{what}: as.ne[0]={} must equal b.ne[0]={}", an[0], bn[0]);
        ensure!(
            bn[1] > 0 && idn[0] % bn[1] == 0,
            "{what}: ids.ne[0]={} must be a multiple of b.ne[1]={}",
            idn[0],
            bn[1]
        );
        let ne = [an[1], idn[0], bn[2], 1];
        self.op_node(
            what,
            Out::New(Type::F32, ne),
            Op::MulMatId,
            vec![Some(as_.clone()), Some(b.clone()), Some(ids.clone())],
        )
    }

    /// ggml_out_prod: a [m, n] and b [p, n] -> [m, p] (sum over n of outer products).
    pub fn out_prod(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let (an, bn) = (a.ne(), b.ne());
        ensure!(an[1] == bn[1], "outProd: a.ne[1]={} must equal b.ne[1]={}", an[1], bn[1]);
        ensure!(an[2] > 0 && bn[2] % an[2] == 0, "outProd: b.ne[2]={} must be a multiple of a.ne[2]={}", bn[2], an[2]);
        ensure!(an[3] > 0 && bn[3] % an[3] == 0, "outProd: b.ne[3]={} must be a multiple of a.ne[3]={}", bn[3], an[3]);
        ensure!(!a.is_transposed(), "outProd: a must not be transposed");
        let ne = [an[0], bn[0], bn[2], bn[3]];
        self.op_node("outProd", Out::New(Type::F32, ne), Op::OutProd, vec![Some(a.clone()), Some(b.clone())])
    }

    /// ggml_rope_ext: rotary embedding of a with positions b (i32, one per a.ne[2]) and
    /// optional frequency factors c.
    pub fn rope_ext(&self, a: &Tensor, b: &Tensor, c: Option<&Tensor>, p: RopeParams, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "ropeExtInplace" } else { "ropeExt" };
        ensure!(p.mode & 1 == 0, "{what}: mode={} has bit 0 set, which ggml no longer supports", p.mode);
        self.check_rope(what, a, b, c, &p)?;
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, Op::Rope { p }, vec![Some(a.clone()), Some(b.clone()), c.cloned()])
    }

    /// ggml_rope_back: the gradient of rope_ext (a = dy).
    pub fn rope_back(&self, a: &Tensor, b: &Tensor, c: Option<&Tensor>, p: RopeParams) -> Result<Tensor> {
        self.check_rope("ropeBack", a, b, c, &p)?;
        self.op_node("ropeBack", Out::Like(a), Op::RopeBack { p }, vec![Some(a.clone()), Some(b.clone()), c.cloned()])
    }

    fn check_rope(&self, what: &str, a: &Tensor, b: &Tensor, c: Option<&Tensor>, p: &RopeParams) -> Result<()> {
        ensure!(b.is_vector(), "{what}: positions b must be a vector, got {}", fmt_shape(&b.ne()));
        ensure!(b.ty() == Type::I32, "{what}: positions b.type={} must be i32", b.ty());
        ensure!(a.ne()[2] == b.ne()[0], "{what}: a.ne[2]={} must equal b.ne[0]={}", a.ne()[2], b.ne()[0]);
        ensure!(
            p.n_dims >= 0 && p.n_dims as i64 <= a.ne()[0],
            "{what}: nDims={} must be in 0..=a.ne[0]={}",
            p.n_dims,
            a.ne()[0]
        );
        ensure!(p.n_dims % 2 == 0, "{what}: nDims={} must be even", p.n_dims);
        if let Some(c) = c {
            ensure!(c.ty() == Type::F32, "{what}: freq factors c.type={} must be f32", c.ty());
            ensure!(
                c.ne()[0] >= (p.n_dims / 2) as i64,
                "{what}: c.ne[0]={} must be at least nDims/2={}",
                c.ne()[0],
                p.n_dims / 2
            );
        }
        Ok(())
    }

    /// ggml_flash_attn_ext: softmax(q k^T * scale + mask) v with the result permuted to
    /// [d_v, n_head, n_batch, ...].
    #[allow(clippy::too_many_arguments)]
    pub fn flash_attn_ext(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        scale: f32,
        max_bias: f32,
        logit_softcap: f32,
    ) -> Result<Tensor> {
        let what = "flashAttnExt";
        let (qn, kn, vn) = (q.ne(), k.ne(), v.ne());
        ensure!(kn[0] == qn[0], "{what}: k.ne[0]={} must equal q.ne[0]={}", kn[0], qn[0]);
        ensure!(kn[2] > 0 && qn[2] % kn[2] == 0, "{what}: q.ne[2]={} must be a multiple of k.ne[2]={}", qn[2], kn[2]);
        ensure!(kn[3] > 0 && qn[3] % kn[3] == 0, "{what}: q.ne[3]={} must be a multiple of k.ne[3]={}", qn[3], kn[3]);
        // Checks ggml's CPU kernel asserts, moved here so no backend reads out of bounds.
        ensure!(vn[0] == qn[0], "{what}: v.ne[0]={} must equal q.ne[0]={} (one head size)", vn[0], qn[0]);
        ensure!(vn[1] == kn[1], "{what}: v.ne[1]={} must equal k.ne[1]={} (one value per key)", vn[1], kn[1]);
        ensure!(
            vn[2] == kn[2] && vn[3] == kn[3],
            "{what}: v {} and k {} must have the same heads",
            fmt_shape(&vn),
            fmt_shape(&kn)
        );
        if let Some(m) = mask {
            ensure!(m.is_contiguous(), "{what}: mask must be contiguous");
            ensure!(m.ne()[2] == 1 && m.ne()[3] == 1, "{what}: mask must be 2-D, got {}", fmt_shape(&m.ne()));
            ensure!(m.ne()[0] == kn[1], "{what}: mask.ne[0]={} must equal k.ne[1]={}", m.ne()[0], kn[1]);
            ensure!(
                m.ne()[1] >= pad(qn[1] as usize, KQ_MASK_PAD as usize) as i64,
                "{what}: mask.ne[1]={} must be at least q.ne[1]={} padded to {}",
                m.ne()[1],
                qn[1],
                KQ_MASK_PAD
            );
        }
        ensure!(max_bias <= 0.0 || mask.is_some(), "{what}: maxBias={max_bias} > 0 needs a mask");
        let ne = [qn[0], qn[2], qn[1], qn[3]];
        let op = Op::FlashAttnExt { scale, max_bias, logit_softcap, prec: Prec::Default };
        self.op_node(
            what,
            Out::New(Type::F32, ne),
            op,
            vec![Some(q.clone()), Some(k.clone()), Some(v.clone()), mask.cloned()],
        )
    }

    /// ggml_flash_attn_ext_set_prec.
    pub fn flash_attn_ext_set_prec(&self, t: &Tensor, prec: Prec) -> Result<()> {
        match t.op() {
            Op::FlashAttnExt { scale, max_bias, logit_softcap, .. } => {
                t.set_op(Op::FlashAttnExt { scale, max_bias, logit_softcap, prec })
            }
            other => Err(crate::Error::invalid(format!(
                "flashAttnExtSetPrec: tensor is {}, not FLASH_ATTN_EXT",
                other.name()
            ))),
        }
    }

    /// ggml_ssm_conv (Mamba): sx [d_conv-1+n_t, d_inner, n_s], c [d_conv, d_inner].
    pub fn ssm_conv(&self, sx: &Tensor, c: &Tensor) -> Result<Tensor> {
        let what = "ssmConv";
        ensure!(sx.is_3d(), "{what}: sx must be 3-D, got {}", fmt_shape(&sx.ne()));
        ensure!(c.is_matrix(), "{what}: c must be a matrix, got {}", fmt_shape(&c.ne()));
        let (d_conv, d_inner) = (c.ne()[0], c.ne()[1]);
        let n_t = sx.ne()[0] - d_conv + 1;
        ensure!(n_t >= 0, "{what}: sx.ne[0]={} must be at least c.ne[0]-1={}", sx.ne()[0], d_conv - 1);
        ensure!(sx.ne()[1] == d_inner, "{what}: sx.ne[1]={} must equal c.ne[1]={}", sx.ne()[1], d_inner);
        let ne = [d_inner, n_t, sx.ne()[2], 1];
        self.op_node(what, Out::New(Type::F32, ne), Op::SsmConv, vec![Some(sx.clone()), Some(c.clone())])
    }

    /// ggml_ssm_scan (Mamba selective scan). Output: y then the final states, flattened.
    pub fn ssm_scan(&self, s: &Tensor, x: &Tensor, dt: &Tensor, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
        let what = "ssmScan";
        for (n, t) in [("s", s), ("x", x), ("dt", dt), ("A", a)] {
            ensure!(t.is_contiguous(), "{what}: {n} must be contiguous");
        }
        ensure!(a.is_matrix(), "{what}: A must be a matrix");
        ensure!(b.is_3d() && s.is_3d(), "{what}: B and s must be 3-D");
        ensure!(
            b.nb()[0] == b.element_size() && c.nb()[0] == c.element_size(),
            "{what}: B and C must have packed rows"
        );
        ensure!(
            x.same_shape(dt),
            "{what}: x {} and dt {} must have the same shape",
            fmt_shape(&x.ne()),
            fmt_shape(&dt.ne())
        );
        ensure!(
            b.same_shape(c),
            "{what}: B {} and C {} must have the same shape",
            fmt_shape(&b.ne()),
            fmt_shape(&c.ne())
        );
        let (d_state, d_inner) = (s.ne()[0], s.ne()[1]);
        let (n_seq_tokens, n_seqs) = (x.ne()[1], x.ne()[2]);
        ensure!(s.ne()[2] == n_seqs, "{what}: s.ne[2]={} must equal x.ne[2]={}", s.ne()[2], n_seqs);
        ensure!(x.ne()[0] == d_inner, "{what}: x.ne[0]={} must equal s.ne[1]={}", x.ne()[0], d_inner);
        ensure!(
            a.ne()[0] == d_state && a.ne()[1] == d_inner,
            "{what}: A {} must be [d_state={d_state}, d_inner={d_inner}]",
            fmt_shape(&a.ne())
        );
        ensure!(
            b.ne()[0] == d_state && b.ne()[1] == n_seq_tokens && b.ne()[2] == n_seqs,
            "{what}: B {} must be [d_state={d_state}, n_seq_tokens={n_seq_tokens}, n_seqs={n_seqs}]",
            fmt_shape(&b.ne())
        );
        let ne = [x.nelements() + s.nelements(), 1, 1, 1];
        self.op_node(
            what,
            Out::New(Type::F32, ne),
            Op::SsmScan,
            vec![Some(s.clone()), Some(x.clone()), Some(dt.clone()), Some(a.clone()), Some(b.clone()), Some(c.clone())],
        )
    }

    /// ggml_rwkv_wkv (RWKV v6 time mixing). Output: y then the new states.
    pub fn rwkv_wkv(
        &self,
        k: &Tensor,
        v: &Tensor,
        r: &Tensor,
        tf: &Tensor,
        td: &Tensor,
        state: &Tensor,
    ) -> Result<Tensor> {
        let what = "rwkvWkv";
        for (n, t) in [("k", k), ("v", v), ("r", r), ("tf", tf), ("td", td), ("state", state)] {
            ensure!(t.is_contiguous(), "{what}: {n} must be contiguous");
        }
        let (s, h, n_tokens) = (k.ne()[0], k.ne()[2], k.ne()[3]);
        let n_seqs = state.ne()[1];
        ensure!(k.ne()[1] == 1, "{what}: k.ne[1]={} must be 1", k.ne()[1]);
        for (n, t) in [("v", v), ("r", r), ("td", td)] {
            ensure!(
                t.ne() == [1, s, h, n_tokens],
                "{what}: {n} {} must be [1, {s}, {h}, {n_tokens}]",
                fmt_shape(&t.ne())
            );
        }
        ensure!(tf.nelements() >= s * h, "{what}: tf must hold at least S*H={} elements", s * h);
        ensure!(
            state.nelements() == s * s * h * n_seqs,
            "{what}: state must hold S*S*H*n_seqs={} elements",
            s * s * h * n_seqs
        );
        ensure!(
            n_seqs > 0 && n_tokens % n_seqs == 0,
            "{what}: k.ne[3]={n_tokens} tokens must split evenly over {n_seqs} sequences"
        );
        let ne = [s * h, n_tokens + s * n_seqs, 1, 1];
        self.op_node(
            what,
            Out::New(Type::F32, ne),
            Op::RwkvWkv,
            vec![
                Some(k.clone()),
                Some(v.clone()),
                Some(r.clone()),
                Some(tf.clone()),
                Some(td.clone()),
                Some(state.clone()),
            ],
        )
    }

    /// ggml_add_rel_pos (SAM).
    pub fn add_rel_pos(&self, a: &Tensor, pw: &Tensor, ph: &Tensor, inplace: bool) -> Result<Tensor> {
        let what = if inplace { "addRelPosInplace" } else { "addRelPos" };
        ensure!(pw.same_shape(ph), "{what}: pw and ph must have the same shape");
        ensure!(a.is_contiguous() && pw.is_contiguous() && ph.is_contiguous(), "{what}: a, pw, ph must be contiguous");
        ensure!(pw.ty() == Type::F32 && ph.ty() == Type::F32, "{what}: pw and ph must be f32");
        ensure!(pw.ne()[3] == a.ne()[2], "{what}: pw.ne[3]={} must equal a.ne[2]={}", pw.ne()[3], a.ne()[2]);
        ensure!(pw.ne()[0] * pw.ne()[0] == a.ne()[0], "{what}: pw.ne[0]^2 must equal a.ne[0]={}", a.ne()[0]);
        ensure!(pw.ne()[1] * pw.ne()[2] == a.ne()[1], "{what}: pw.ne[1]*pw.ne[2] must equal a.ne[1]={}", a.ne()[1]);
        let out = if inplace { Out::InplaceOf(a) } else { Out::Like(a) };
        self.op_node(what, out, Op::AddRelPos { inplace }, vec![Some(a.clone()), Some(pw.clone()), Some(ph.clone())])
    }

    /// ggml_opt_step_adamw: one AdamW step on parameter a with gradient `grad`, in place.
    /// The first and second moments are new tensors (src[2], src[3]) the caller zeroes.
    #[allow(clippy::too_many_arguments)]
    pub fn opt_step_adamw(
        &self,
        a: &Tensor,
        grad: &Tensor,
        alpha: f32,
        beta1: f32,
        beta2: f32,
        eps: f32,
        wd: f32,
    ) -> Result<Tensor> {
        let what = "optStepAdamw";
        ensure!(a.has_flag(flags::PARAM), "{what}: a must be a parameter (setParam)");
        ensure!(
            a.same_shape(grad),
            "{what}: a {} and grad {} must have the same shape",
            fmt_shape(&a.ne()),
            fmt_shape(&grad.ne())
        );
        ensure!(alpha > 0.0, "{what}: alpha={alpha} must be positive");
        ensure!((0.0..=1.0).contains(&beta1), "{what}: beta1={beta1} must be in [0, 1]");
        ensure!((0.0..=1.0).contains(&beta2), "{what}: beta2={beta2} must be in [0, 1]");
        ensure!(eps >= 0.0, "{what}: eps={eps} must not be negative");
        ensure!((0.0..=1.0).contains(&wd), "{what}: wd={wd} must be in [0, 1]");
        let m = self.dup_tensor(grad)?;
        let v = self.dup_tensor(grad)?;
        let op = Op::OptStepAdamw { iter: 1, alpha, beta1, beta2, eps, wd };
        self.op_node(what, Out::InplaceOf(a), op, vec![Some(a.clone()), Some(grad.clone()), Some(m), Some(v)])
    }
}
