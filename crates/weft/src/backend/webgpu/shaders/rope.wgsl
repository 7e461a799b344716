// ROPE and ROPE_BACK (the same rotation by -theta: sin_sign = -1), f32 or f16 (F16) data,
// normal mode (pairs i, i+1) or GPT-NeoX mode (pairs i, i + n_dims/2), YaRN ramp and
// optional frequency factors (FF). One invocation per rotated pair or per element past
// n_dims (copied), so a pair is read whole before it is written: safe in place.
//
// The angle follows the CPU backend step by step in f32: theta starts at the position and
// is multiplied by theta_scale once per pair (repeated multiplication, not a power), then
// divided by the pair's frequency factor; the per-node constants (theta_scale, the YaRN
// corr dims, the magnitude mscale) are computed on the host exactly as the CPU does.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    pos: Layout,
    // Element offsets of dst, a and pos inside their bindings; w: invocations.
    offs: vec4<u32>,
    // Element offset and stride of the frequency factors.
    ff_off: u32,
    ff_stride: u32,
    n_dims: u32,
    // 1: NeoX pairs.
    neox: u32,
    theta_scale: f32,
    freq_scale: f32,
    ext_factor: f32,
    // attn_factor, times YaRN's magnitude correction when ext_factor != 0.
    mscale: f32,
    // YaRN ramp: y = (pair - corr_low) / corr_denom, corr_denom = max(0.001, high - low).
    corr_low: f32,
    corr_denom: f32,
    // 1 for ROPE, -1 for ROPE_BACK.
    sin_sign: f32,
    // Invocations per row: n_dims/2 pairs, then ne0 - n_dims copied elements.
    per_row: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef F16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#endif
@group(0) @binding(2) var<storage, read_write> pos: array<i32>;
#ifdef FF
@group(0) @binding(3) var<storage, read_write> ff: array<f32>;
#endif
#ifdef F16
// Halves of one word may belong to different invocations (NeoX pairs, odd rows): each
// writes its own half with atomics, leaving the other half alone.
@group(0) @binding(4) var<storage, read_write> dst: array<atomic<u32>>;
#else
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;
#endif

fn load(i: u32) -> f32 {
#ifdef F16
    return half_to_f32(a[i / 2u], i);
#else
    return a[i];
#endif
}

fn store(i: u32, v: f32) {
#ifdef F16
    let shift = 16u * (i % 2u);
    atomicAnd(&dst[i / 2u], ~(0xffffu << shift));
    atomicOr(&dst[i / 2u], f32_to_half(v) << shift);
#else
    dst[i] = v;
#endif
}

// C's a > b ? a : b and a < b ? a : b, as ggml's YaRN math uses them (NaN behaviour).
fn c_max(a: f32, b: f32) -> f32 {
    return select(b, a, a > b);
}
fn c_min(a: f32, b: f32) -> f32 {
    return select(b, a, a < b);
}

// (cos, sin) of pair k's angle at position `position`, scaled by mscale, sin times sin_sign.
fn angle(position: i32, k: u32) -> vec2<f32> {
    var theta = f32(position);
    for (var j = 0u; j < k; j = j + 1u) {
        theta = theta * p.theta_scale;
    }
#ifdef FF
    let theta_extrap = theta / ff[p.ff_off + k * p.ff_stride];
#else
    let theta_extrap = theta;
#endif
    let theta_interp = p.freq_scale * theta_extrap;
    var t = theta_interp;
    if (p.ext_factor != 0.0) {
        let y = (f32(k) - p.corr_low) / p.corr_denom;
        let ramp_mix = (1.0 - c_min(1.0, c_max(0.0, y))) * p.ext_factor;
        t = fma(theta_interp, 1.0 - ramp_mix, theta_extrap * ramp_mix);
    }
    return vec2<f32>(cos(t) * p.mscale, (sin(t) * p.mscale) * p.sin_sign);
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let row = i / p.per_row;
    let j = i % p.per_row;
    let r = unravel_row(row, p.a.ne);
    let base_a = p.offs.y + dot(r, p.a.nb);
    let base_d = p.offs.x + dot(r, p.dst.nb);
    let half_dims = p.n_dims / 2u;
    if (j >= half_dims) {
        // Past the rotated dimensions: copied unchanged.
        let i0 = p.n_dims + (j - half_dims);
        store(base_d + i0 * p.dst.nb.x, load(base_a + i0 * p.a.nb.x));
        return;
    }
    var j0 = 2u * j;
    var j1 = j0 + 1u;
    if (p.neox != 0u) {
        j0 = j;
        j1 = j + half_dims;
    }
    let cs = angle(pos[p.offs.z + r.z * p.pos.nb.x], j);
    let x0 = load(base_a + j0 * p.a.nb.x);
    let x1 = load(base_a + j1 * p.a.nb.x);
    // The CPU's x0*c - x1*s and x0*s + x1*c, with the first product fused.
    store(base_d + j0 * p.dst.nb.x, fma(x0, cs.x, -(x1 * cs.y)));
    store(base_d + j1 * p.dst.nb.x, fma(x0, cs.y, x1 * cs.x));
}
