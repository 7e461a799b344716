//! FLASH_ATTN_EXT: softmax(scale * q k^T + slope * mask) v, one query row at a time with an
//! online softmax (running maximum M and sum S), written in ggml's permuted layout
//! [d, n_head, n_batch, ne3].
//!
//! Numerics follow ggml-cpu: the query row is first converted to K's "vec dot" type (f16 for
//! f16 keys, q8_0 for q4_0 / q8_0 keys: `flash_attn_kv`) and each score is a dot in that
//! type; logit_softcap divides the scale and applies softcap * tanh(s); masked-out keys
//! (-inf) are skipped; with f16 values the weighted sum is accumulated in an f16 vector
//! (rounded after every update) and in f32 otherwise; those updates and the running sum S
//! are fused multiply-adds, as ggml's FMA build computes them. ggml's CPU runs the same
//! kernel for the default and f32 precisions.

use super::flash_attn_kv::{kv_row_ops, KvRowOps};
use super::softmax::alibi_slope;
use super::{fused, is_quant_rows, mad_f32, src};
use crate::backend::cpu::float_simd::kernels;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::{f16_to_f32, Type};
use crate::{Error, Result};

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(q), Some(k), Some(v)) = (node.src(0), node.src(1), node.src(2)) else {
        return false;
    };
    // Quantized K / V rows are read as packed blocks.
    let kv = |t: &Tensor| kv_row_ops(t.ty()).is_some() && (!t.ty().is_quantized() || is_quant_rows(t));
    q.ty() == Type::F32 && kv(k) && kv(v) && node.src(3).is_none_or(|m| m.ty() == Type::F16) && node.ty() == Type::F32
}

/// The weighted sum of value rows, with ggml's two accumulators: an f16 vector for f16
/// values (ggml_vec_scale_f16 / ggml_vec_mad_f16 round each update to f16), f32 otherwise.
/// Both keep f32 lanes and run the vector table's loops; the f16 one rounds its lanes to f16
/// after every update (narrowed and widened again), which gives the f16 vector's bits.
struct Acc {
    acc: Vec<f32>,
    row: Vec<f32>,
    /// The f16 accumulator's rounding buffer; None for the f32 accumulator.
    half: Option<Vec<u16>>,
}

impl Acc {
    fn new(v_ty: Type, d: usize) -> Acc {
        Acc { acc: vec![0.0; d], row: vec![0.0; d], half: (v_ty == Type::F16).then(|| vec![0; d]) }
    }
    fn clear(&mut self) {
        self.acc.fill(0.0);
    }
    /// Round the lanes to f16, as an f16 accumulator holds them.
    fn round(&mut self) {
        if let Some(h) = &mut self.half {
            let (k, n) = (kernels(), self.acc.len());
            // SAFETY: acc and h both hold n elements.
            unsafe {
                (k.f32_to_f16)(self.acc.as_ptr(), h.as_mut_ptr(), n);
                (k.f16_to_f32)(h.as_ptr(), self.acc.as_mut_ptr(), n);
            }
        }
    }
    fn scale(&mut self, s: f32) {
        // SAFETY: acc holds its length; the kernel allows out == x.
        unsafe { (kernels().scale)(self.acc.as_ptr(), s, self.acc.as_mut_ptr(), self.acc.len()) };
        self.round();
    }
    /// acc += w * v_row.
    ///
    /// # Safety
    /// `v` points at a V row of the accumulator's length.
    #[inline(always)]
    unsafe fn mad(&mut self, v: *const u8, w: f32, ops: &KvRowOps) -> Result<()> {
        (ops.to_f32)(v, &mut self.row)?;
        mad_f32(&mut self.acc, &self.row, w);
        self.round();
        Ok(())
    }
    /// The sum divided by the softmax denominator s.
    fn finish(&self, s: f32, out: &mut [f32]) {
        out.copy_from_slice(&self.acc);
        let s_inv = 1.0 / s;
        out.iter_mut().for_each(|o| *o *= s_inv);
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let Op::FlashAttnExt { scale, max_bias, logit_softcap, .. } = node.op() else {
        return Ok(());
    };
    let (q, k, v) = (src(node, 0)?, src(node, 1)?, src(node, 2)?);
    let mask = node.src(3).map(TData::of).transpose()?;
    let dst = TData::of(node)?;
    let unsupported = |t: &TData| Error::unsupported(format!("flashAttnExt: no CPU kernel for {} K/V", t.ty));
    let k_ops = kv_row_ops(k.ty).ok_or_else(|| unsupported(&k))?;
    let v_ops = kv_row_ops(v.ty).ok_or_else(|| unsupported(&v))?;

    let d = q.n(0);
    let (nq1, nq2, nq3) = (q.n(1), q.n(2), q.n(3));
    let n_kv = k.n(1);
    // Heads of q share K/V heads (grouped-query attention): broadcast factors.
    let (rk2, rk3) = (nq2 / k.n(2), nq3 / k.n(3));
    let (rv2, rv3) = (nq2 / v.n(2), nq3 / v.n(3));
    // With a softcap the scale applies inside the tanh: softcap * tanh(s * scale / softcap).
    let scale = if logit_softcap != 0.0 { scale / logit_softcap } else { scale };

    cx.try_par_ranges(nq1 * nq2 * nq3, 1, |rows| {
        fused(|| {
            let mut q_row = vec![0f32; d];
            let mut q_conv = vec![0u8; (k_ops.q_row_size)(d)];
            let mut acc = Acc::new(v.ty, d);
            let mut out = vec![0f32; d];
            for ir in rows {
                let (iq1, iq2, iq3) = (ir % nq1, (ir / nq1) % nq2, ir / (nq1 * nq2));
                let slope = alibi_slope(max_bias, nq2 as u32, iq2 as u32);
                let (ik2, ik3, iv2, iv3) = (iq2 / rk2, iq3 / rk3, iq2 / rv2, iq3 / rv3);
                // SAFETY: every index stays inside its tensor's shape: the constructor checked
                // k/v rows against q, the broadcast factors, and the mask's n_kv columns and
                // padded rows (>= q.ne[1]).
                unsafe {
                    q.load_row(iq1, iq2, iq3, &mut q_row);
                    (k_ops.q_from_f32)(&q_row, &mut q_conv)?;
                    acc.clear();
                    let (mut m, mut s_sum) = (f32::NEG_INFINITY, 0f32);
                    for ic in 0..n_kv {
                        let mv = match &mask {
                            Some(mk) => slope * f16_to_f32((mk.at(ic, iq1, 0, 0) as *const u16).read_unaligned()),
                            None => 0.0,
                        };
                        if mv == f32::NEG_INFINITY {
                            continue;
                        }
                        let mut s = (k_ops.dot)(k.at(0, ic, ik2, ik3), &q_conv, d)? * scale;
                        if logit_softcap != 0.0 {
                            s = logit_softcap * s.tanh();
                        }
                        s += mv;
                        // Online softmax: a new maximum rescales what was summed so far (ms);
                        // otherwise the new value is weighted by exp(s - M) (vs).
                        let m_old = m;
                        let (mut ms, mut vs) = (1f32, 1f32);
                        if s > m {
                            m = s;
                            ms = (m_old - m).exp();
                            acc.scale(ms);
                        } else {
                            vs = (s - m).exp();
                        }
                        acc.mad(v.at(0, ic, iv2, iv3), vs, &v_ops)?;
                        s_sum = s_sum.mul_add(ms, vs);
                    }
                    acc.finish(s_sum, &mut out);
                    // ggml's permute(0, 2, 1, 3): head before batch in the result.
                    dst.store_row(iq2, iq1, iq3, &out);
                }
            }
            Ok(())
        })
    })
}
