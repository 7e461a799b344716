//! How many loop iterations one invocation of a node's kernel runs, at most: lavapipe
//! (llvmpipe) ends an invocation's loops after 65535 iterations in all, silently, so on that
//! device `dispatch::supports` refuses a node whose bound is larger and the node runs on
//! another backend instead of giving a wrong answer (SUM was right over 16.0M elements,
//! 62,500 iterations per invocation, and wrong over 17.5M).
//!
//! The bounds follow each shader's loops for the workgroup sizes its planner picks (helper
//! and tree-reduction loops folded into the constants). Kernels whose loops are bounded by
//! constants, or pass the limit only with shapes no storage binding holds, are 0 here:
//! elementwise maps, copies (but quantizing into a grid I-quant), GET_ROWS, ROPE, IM2COL(_BACK), the layout and generator ops,
//! ARGSORT (rows capped at 256 for this reason, ops/index.rs) and SSM_CONV.

use super::{WG_ELEMENTWISE, WG_ROWS};
use crate::op::{Op, PoolOp};
use crate::tensor::Tensor;
use crate::types::Type;

/// lavapipe's per-invocation loop budget (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS).
pub const LLVMPIPE_LOOP_LIMIT: u64 = 65535;

fn ne(t: Option<&Tensor>, d: usize) -> u64 {
    t.map_or(0, |t| t.ne()[d].max(0) as u64)
}

/// The most loop iterations one invocation of `node`'s kernel runs.
pub fn bound(node: &Tensor) -> u64 {
    let (s0, s1) = (node.src(0), node.src(1));
    let per_row = |wg: u32| ne(s0, 0).div_ceil(wg as u64);
    // Row kernels: up to three passes over the row, then tree reductions.
    let row_passes = 3 * per_row(WG_ROWS) + 50;
    match node.op() {
        // One workgroup over the whole tensor.
        Op::Sum | Op::CountEqual => s0.map_or(0, |t| t.nelements() as u64).div_ceil(WG_ELEMENTWISE as u64) + 10,
        Op::SumRows
        | Op::Mean
        | Op::Argmax
        | Op::Norm { .. }
        | Op::RmsNorm { .. }
        | Op::RmsNormBack { .. }
        | Op::SoftMax { .. }
        | Op::SoftMaxBack
        | Op::CrossEntropyLossBack => row_passes,
        Op::GroupNorm { n_groups, .. } => {
            let per_group = ne(s0, 2).div_ceil(n_groups.max(1) as u64);
            3 * (ne(s0, 0) * ne(s0, 1) * per_group).div_ceil(WG_ROWS as u64) + 17
        }
        // One workgroup walks every row.
        Op::CrossEntropyLoss => s0.map_or(0, |t| t.nrows() as u64) * (row_passes - 25) + 1,
        Op::RepeatBack => {
            // Nested loops over the repeats of each dim, outermost dim 3.
            let r = |d: usize| ne(s0, d) / (node.ne()[d].max(1) as u64);
            let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
            (r3 + 1) + r3 * (r2 + 1) + r3 * r2 * (r1 + 1) + r3 * r2 * r1 * (r0 + 1)
        }
        // Every index, for every output element.
        Op::GetRowsBack => ne(s1, 0) + 1,
        // Sequential over tokens, d_state per token.
        Op::SsmScan => {
            let d_state = ne(s0, 0);
            ne(s1, 1) * (d_state + 2) + d_state + 2
        }
        Op::RwkvWkv => {
            let (s, n_tokens) = (ne(s0, 0), ne(s0, 3));
            let n_seqs = ne(node.src(5), 1).max(1);
            (n_tokens / n_seqs) * (s + 2) + s + 2
        }
        // The tiled GEMM's steps of 16 along K (Mesa unrolls their inner loops: measured
        // right at K = 30000 and wrong at K = 70000), which also covers the mat-vec and
        // naive kernels.
        Op::MulMat { .. } => 18 * ne(s0, 0).div_ceil(16) + 130,
        Op::MulMatId => 6 * ne(s0, 0) / 4 + 2,
        Op::OutProd => 6 * ne(s0, 1) + 6,
        Op::FlashAttnExt { .. } => {
            let d = ne(s0, 0);
            let acc_n = d.div_ceil(4 * WG_ROWS as u64).clamp(1, 2);
            ne(s1, 1).div_ceil(WG_ROWS as u64) * (d / 4 + 197 + 65 * acc_n) + 8
        }
        // Quantizing into a grid I-quant (quantize_iq.wgsl, one invocation per sub-block):
        // the scale searches, their neighbour scans written out, stay under 26,000 (1600
        // blocks of each type stayed exact with 40,000 extra iterations in front). An iq1
        // lane with a zero sub-block also walks back along its row, 2 BS + 1 per block.
        Op::Dup | Op::Cpy | Op::Cont if super::cpy::grid_lanes(node.ty()).is_some() => {
            let walk = matches!(node.ty(), Type::IQ1_S | Type::IQ1_M);
            26_000 + if walk { ne(Some(node), 0).div_ceil(256) * 65 } else { 0 }
        }
        Op::Pool1d { k0, .. } => k0.max(0) as u64 + 3,
        Op::Pool2d { p } => {
            let (k0, k1) = (p.k0.max(0) as u64, p.k1.max(0) as u64);
            k0 * k1 + 2 * k1 + 1
        }
        Op::Pool2dBack { p } => {
            let (k0, k1) = (p.k0.max(0) as u64, p.k1.max(0) as u64);
            // Windows covering one input position, per dim.
            let ny = k1.div_ceil(p.s1.max(1) as u64).min(ne(s0, 1));
            let nx = k0.div_ceil(p.s0.max(1) as u64).min(ne(s0, 0));
            match p.op {
                PoolOp::Max => ny * nx * (k0 * k1 + 2 * k1 + 2) + 2 * ny + 1,
                PoolOp::Avg => ny * (nx + 2) + 1,
            }
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;

    fn ctx() -> Context {
        Context::new(crate::context::ContextParams { mem_size: 1 << 20, no_alloc: true }).unwrap()
    }

    #[test]
    fn sum_crosses_the_limit_between_the_sizes_measured_on_lavapipe() {
        let c = ctx();
        let sum = |n: i64| bound(&c.sum(&c.new_tensor_1d(Type::F32, n).unwrap()).unwrap());
        assert!(sum(16_000_000) <= LLVMPIPE_LOOP_LIMIT);
        assert!(sum(17_500_000) > LLVMPIPE_LOOP_LIMIT);
    }

    #[test]
    fn mul_mat_crosses_the_limit_between_the_sizes_measured_on_lavapipe() {
        let c = ctx();
        let mm = |k: i64| {
            let a = c.new_tensor_2d(Type::F32, k, 64).unwrap();
            let b = c.new_tensor_2d(Type::F32, k, 16).unwrap();
            bound(&c.mul_mat(&a, &b).unwrap())
        };
        assert!(mm(30_000) <= LLVMPIPE_LOOP_LIMIT);
        assert!(mm(70_000) > LLVMPIPE_LOOP_LIMIT);
    }
}
