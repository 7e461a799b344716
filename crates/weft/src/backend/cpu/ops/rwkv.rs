//! RWKV_WKV (RWKV v6 time mixing), f32. Per sequence and head, token by token, with an
//! S x S state (rows i: key channels, columns j: value channels):
//!   y[t, j]      = sum_i r[t, i] * (k[t, i] * v[t, j] * tf[i] + state[i, j])
//!   state[i, j] <- state[i, j] * td[t, i] + k[t, i] * v[t, j]
//! The result holds y for every token, then each sequence's final state.
//!
//! ggml runs this on one thread; sequences and heads never touch each other's values, so
//! here they are split across workers, with each sum still taken in ggml's order (i ascending)
//! and its multiply-adds fused as ggml's build fuses them (bit-identical to its outputs).

use super::{all_f32, fused, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::tensor::Tensor;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports: all_f32, run };

/// The packed f32 data of a contiguous source (the constructor checked contiguity).
///
/// # Safety
/// The tensor's memory must hold `n` f32 values and outlive the slice.
unsafe fn flat<'a>(t: &TData, n: usize) -> &'a [f32] {
    std::slice::from_raw_parts(t.ptr() as *const f32, n)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let (k, v, r, tf, td, state_in) =
        (src(node, 0)?, src(node, 1)?, src(node, 2)?, src(node, 3)?, src(node, 4)?, src(node, 5)?);
    let d = TData::of(node)?;
    let (s, h, n_tokens) = (k.n(0), k.n(2), k.n(3));
    let n_seqs = state_in.n(1);
    let c = s * h;
    let seq_tokens = n_tokens / n_seqs.max(1);
    // SAFETY: all sources are contiguous f32 of the sizes the constructor checked.
    let (k, v, r, td) =
        unsafe { (flat(&k, n_tokens * c), flat(&v, n_tokens * c), flat(&r, n_tokens * c), flat(&td, n_tokens * c)) };
    let tf = unsafe { flat(&tf, c) };
    let state_in = unsafe { flat(&state_in, s * c * n_seqs) };
    cx.par_ranges(n_seqs * h, 1, |pairs| {
        fused(|| {
            let out = d.ptr() as *mut f32;
            let mut state = vec![0f32; s * s];
            let mut y = vec![0f32; s];
            for pair in pairs {
                let (seq, head) = (pair / h, pair % h);
                // This sequence's state for this head: s*s values inside the s*c block.
                let state_at = seq * s * c + head * s * s;
                state.copy_from_slice(&state_in[state_at..state_at + s * s]);
                for t in seq * seq_tokens..(seq + 1) * seq_tokens {
                    let th = t * c + head * s;
                    y.fill(0.0);
                    for i in 0..s {
                        let (k_i, r_i, tf_i, td_i) = (k[th + i], r[th + i], tf[head * s + i], td[th + i]);
                        let row = &mut state[i * s..(i + 1) * s];
                        for (j, st) in row.iter_mut().enumerate() {
                            let kv = v[th + j] * k_i;
                            y[j] = kv.mul_add(tf_i, *st).mul_add(r_i, y[j]);
                            *st = st.mul_add(td_i, kv);
                        }
                    }
                    // SAFETY: token t of this head is written by this worker only.
                    unsafe { std::ptr::copy_nonoverlapping(y.as_ptr(), out.add(th), s) };
                }
                // SAFETY: the states follow the n_tokens * c outputs; this block is ours.
                unsafe { std::ptr::copy_nonoverlapping(state.as_ptr(), out.add(n_tokens * c + state_at), s * s) };
            }
        })
    });
    Ok(())
}
