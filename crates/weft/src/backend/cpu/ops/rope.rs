//! ROPE and ROPE_BACK: rotary position embedding, f32 and f16, normal (adjacent pairs) and
//! GPT-NeoX (pairs half a rotation apart) modes, with YaRN scaling and optional frequency
//! factors. ROPE_BACK is the same rotation by -theta (the transposed rotation matrix).
//!
//! The angle math follows ggml-cpu step by step in f32 (theta_scale = powf(base, -2/n_dims),
//! theta multiplied up pair by pair, the YaRN ramp and magnitude correction), because a
//! different order of the same operations changes the last bits of every angle; the
//! multiply-adds ggml's build fuses are fused here too. The results equal ggml's reference
//! outputs bit for bit (all 96 ROPE eval cases, f32 and f16).

use super::{fused, src};
use crate::backend::cpu::kernel::{Cx, Kernel};
use crate::backend::cpu::tdata::TData;
use crate::op::{c_max, c_min, Op, RopeParams, ROPE_TYPE_NEOX};
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, run };

fn supports(node: &Tensor) -> bool {
    let (Some(a), Some(pos)) = (node.src(0), node.src(1)) else {
        return false;
    };
    matches!(a.ty(), Type::F32 | Type::F16)
        && node.ty() == a.ty()
        && pos.ty() == Type::I32
        && node.src(2).is_none_or(|f| f.ty() == Type::F32)
}

/// rope_yarn_ramp: 1 below `low`, 0 above `high`, linear between (by pair index i0/2).
fn yarn_ramp(low: f32, high: f32, i0: usize) -> f32 {
    let y = ((i0 / 2) as f32 - low) / c_max(0.001, high - low);
    1.0 - c_min(1.0, c_max(0.0, y))
}

/// rope_yarn: (cos, sin) of the YaRN-corrected angle, scaled by the magnitude mscale.
#[inline(always)]
fn yarn_cos_sin(theta_extrap: f32, p: &RopeParams, corr: [f32; 2], i0: usize) -> (f32, f32) {
    let theta_interp = p.freq_scale * theta_extrap;
    let mut theta = theta_interp;
    let mut mscale = p.attn_factor;
    if p.ext_factor != 0.0 {
        let ramp_mix = yarn_ramp(corr[0], corr[1], i0) * p.ext_factor;
        theta = theta_interp.mul_add(1.0 - ramp_mix, theta_extrap * ramp_mix);
        mscale *= 0.1f32.mul_add((1.0 / p.freq_scale).ln(), 1.0);
    }
    (theta.cos() * mscale, theta.sin() * mscale)
}

/// The angles of one position: cache[i0] = cos, cache[i0 + 1] = sin (times `sin_sign`) for
/// the pair starting at i0 (ggml_rope_cache_init). theta advances by repeated
/// multiplication, as in ggml.
struct AngleCache {
    p: RopeParams,
    theta_scale: f32,
    corr: [f32; 2],
    sin_sign: f32,
    freq_factors: Option<Vec<f32>>,
}

impl AngleCache {
    #[inline(always)]
    fn fill(&self, pos: i32, cache: &mut [f32]) {
        let mut theta = pos as f32;
        for i0 in (0..cache.len()).step_by(2) {
            let ff = self.freq_factors.as_ref().map_or(1.0, |f| f[i0 / 2]);
            let (c, s) = yarn_cos_sin(theta / ff, &self.p, self.corr, i0);
            cache[i0] = c;
            cache[i0 + 1] = s * self.sin_sign;
            theta *= self.theta_scale;
        }
    }
}

/// Rotate the first n_dims values of `x` into `out` (the rest of `out` is left as is).
#[inline(always)]
fn rotate(x: &[f32], out: &mut [f32], cache: &[f32], neox: bool) {
    let n_dims = cache.len();
    // Normal mode pairs (i, i+1); NeoX pairs (i, i + n_dims/2). Pair k uses angle k.
    let (stride, span) = if neox { (1, n_dims / 2) } else { (2, 1) };
    for k in 0..n_dims / 2 {
        let (c, s) = (cache[2 * k], cache[2 * k + 1]);
        let (j0, j1) = (k * stride, k * stride + span);
        let (x0, x1) = (x[j0], x[j1]);
        // ggml's x0*c - x1*s and x0*s + x1*c, with the first product fused, as built.
        out[j0] = x0.mul_add(c, -(x1 * s));
        out[j1] = x0.mul_add(s, x1 * c);
    }
}

fn run(node: &Tensor, cx: &Cx) -> Result<()> {
    let (p, forward) = match node.op() {
        Op::Rope { p } => (p, true),
        Op::RopeBack { p } => (p, false),
        _ => return Ok(()),
    };
    let a = src(node, 0)?;
    let pos_t = src(node, 1)?;
    let d = TData::of(node)?;
    let n_dims = p.n_dims as usize;
    // SAFETY: the constructor checked b has a.ne[2] entries and c at least n_dims/2.
    let positions: Vec<i32> =
        (0..a.n(2)).map(|i| unsafe { (pos_t.at(i, 0, 0, 0) as *const i32).read_unaligned() }).collect();
    let freq_factors = match node.src(2) {
        Some(f) => {
            let f = TData::of(f)?;
            Some((0..n_dims / 2).map(|i| unsafe { f.get_f32(i, 0, 0, 0) }).collect())
        }
        None => None,
    };
    let angles = AngleCache {
        p,
        theta_scale: p.theta_scale(),
        corr: p.yarn_corr_dims(),
        sin_sign: if forward { 1.0 } else { -1.0 },
        freq_factors,
    };
    let neox = p.mode & ROPE_TYPE_NEOX != 0;
    let n0 = a.n(0);
    cx.par_ranges(d.nrows(), (4096 / n0.max(1)).max(1), |rows| {
        fused(|| {
            let (mut x, mut out, mut cache) = (vec![0f32; n0], vec![0f32; n0], vec![0f32; n_dims]);
            let mut cached_i2 = usize::MAX;
            for ir in rows {
                let (i1, i2, i3) = d.row_coords(ir);
                // The angles depend on the position alone (one per i2), like ggml's cache.
                if i2 != cached_i2 {
                    angles.fill(positions[i2], &mut cache);
                    cached_i2 = i2;
                }
                // SAFETY: a and dst have the same shape; the row is read whole before it is
                // written, so the in-place variant (dst is a) is fine.
                unsafe {
                    a.load_row(i1, i2, i3, &mut x);
                    out.copy_from_slice(&x);
                    rotate(&x, &mut out, &cache, neox);
                    d.store_row(i1, i2, i3, &out);
                }
            }
        })
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ggml_rope_yarn_corr_dims' arguments as RopeParams.
    fn yarn_corr_dims(n_dims: i32, n_ctx_orig: i32, freq_base: f32, beta_fast: f32, beta_slow: f32) -> [f32; 2] {
        let p = RopeParams {
            n_dims,
            mode: 0,
            n_ctx_orig,
            freq_base,
            freq_scale: 1.0,
            ext_factor: 0.0,
            attn_factor: 1.0,
            beta_fast,
            beta_slow,
        };
        p.yarn_corr_dims()
    }

    #[test]
    fn corr_dims_without_context_are_zero_and_minus_infinity() {
        // n_ctx_orig = 0 (test-backend-ops' setting): log(0) = -inf at both ends.
        let c = yarn_corr_dims(128, 0, 10000.0, 1.0, 1.0);
        assert_eq!(c[0], 0.0);
        assert_eq!(c[1], f32::NEG_INFINITY);
        // So the ramp is 1 at pair 0 and 0 from pair 1 on.
        assert_eq!(yarn_ramp(c[0], c[1], 0), 1.0);
        assert_eq!(yarn_ramp(c[0], c[1], 2), 0.0);
    }

    #[test]
    fn corr_dims_for_llama_style_yarn() {
        // n_dims 128, n_ctx_orig 4096, base 10000, beta 32 / 1, worked with f64 by hand:
        // 128 * ln(4096 / (32 * 2pi)) / (2 ln 10000) = 128 * 3.0142 / 18.4207 = 20.94 -> floor 20
        // 128 * ln(4096 / (1 * 2pi)) / (2 ln 10000) = 128 * 6.4800 / 18.4207 = 45.03 -> ceil 46
        assert_eq!(yarn_corr_dims(128, 4096, 10000.0, 32.0, 1.0), [20.0, 46.0]);
    }
}
