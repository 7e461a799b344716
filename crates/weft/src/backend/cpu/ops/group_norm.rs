//! GROUP_NORM: normalize each group of channels (dim 2) of each sample (dim 3) over all its
//! ne0*ne1*channels elements, with ggml's precision: per-row f64 sums added in f64, the
//! mean and variance rounded to f32, differences and squares in f32.

use super::src;
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::Op;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    node.ty() == Type::F32 && node.src(0).is_some_and(|s| s.ty() == Type::F32)
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let Op::GroupNorm { n_groups, eps } = node.op() else {
        return Ok(());
    };
    let s = src(node, 0)?;
    let d = TData::of(node)?;
    let (n0, n1, n_channels, n3) = (s.n(0), s.n(1), s.n(2), s.n(3));
    let n_groups = n_groups.max(1) as usize;
    // ggml: ceil(channels / groups) channels per group; the last groups may be short or empty.
    let per_group = n_channels.div_ceil(n_groups);
    // One task per (sample, group), as ggml gives each thread whole groups.
    cx.par_ranges(n3 * n_groups, 1, |tasks| {
        let mut x = vec![0f32; n0];
        for t in tasks {
            let (i3, g) = (t / n_groups, t % n_groups);
            let start = (g * per_group).min(n_channels);
            let end = (start + per_group).min(n_channels);
            if start == end {
                continue;
            }
            let count = (n0 * n1 * (end - start)) as f64;
            // SAFETY: every (i1, i2, i3) below is inside src and dst (same shape). In place,
            // each row of src is loaded before the same row of dst is stored.
            unsafe {
                let mut sum = 0f64;
                for i2 in start..end {
                    for i1 in 0..n1 {
                        s.load_row(i1, i2, i3, &mut x);
                        sum += x.iter().map(|&v| v as f64).sum::<f64>();
                    }
                }
                let mean = (sum / count) as f32;
                let mut sum2 = 0f64;
                for i2 in start..end {
                    for i1 in 0..n1 {
                        s.load_row(i1, i2, i3, &mut x);
                        let mut row2 = 0f64;
                        for v in x.iter_mut() {
                            *v -= mean;
                            row2 += (*v * *v) as f64;
                        }
                        sum2 += row2;
                        d.store_row(i1, i2, i3, &x);
                    }
                }
                let variance = (sum2 / count) as f32;
                let scale = 1.0 / (variance + eps).sqrt();
                for i2 in start..end {
                    for i1 in 0..n1 {
                        d.load_row(i1, i2, i3, &mut x);
                        x.iter_mut().for_each(|v| *v *= scale);
                        d.store_row(i1, i2, i3, &x);
                    }
                }
            }
        }
    });
    Ok(())
}
