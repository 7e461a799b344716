// SOFT_MAX: softmax(x * scale + mask * slope) along rows, as ggml computes it. The mask
// (MASK; f16 when MASK_F16, decoded from 32-bit words by common.wgsl's half_to_f32) is
// one matrix: row r of x uses mask row r % ne01. ALiBi slopes per head (dim 2) when
// max_bias > 0. One workgroup per row, three passes (max, sum, write) that each recompute
// the logits, so the op is safe in place.
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    mask: Layout,
    // Element offsets of dst, a and mask inside their bindings; w: number of rows.
    offs: vec4<u32>,
    scale: f32,
    max_bias: f32,
    // ALiBi: slope of head h is m0^(h+1) below n_head_log2, m1^(2(h-n_head_log2)+1) above.
    m0: f32,
    m1: f32,
    n_head_log2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#ifdef MASK
#ifdef MASK_F16
@group(0) @binding(2) var<storage, read_write> mask: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> mask: array<f32>;
#endif
#endif
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

// x^n by repeated squaring, as the C runtime's powi the CPU backend uses.
fn powi(x: f32, n: u32) -> f32 {
    var r = 1.0;
    var b = x;
    var e = n;
    loop {
        if ((e & 1u) != 0u) {
            r = r * b;
        }
        e = e / 2u;
        if (e == 0u) {
            break;
        }
        b = b * b;
    }
    return r;
}

fn alibi_slope(h: u32) -> f32 {
    if (p.max_bias <= 0.0) {
        return 1.0;
    }
    if (h < p.n_head_log2) {
        return powi(p.m0, h + 1u);
    }
    return powi(p.m1, 2u * (h - p.n_head_log2) + 1u);
}

#ifdef MASK
fn mask_at(i: u32) -> f32 {
#ifdef MASK_F16
    return half_to_f32(mask[i / 2u], i);
#else
    return mask[i];
#endif
}
#endif

fn logit(base_a: u32, base_m: u32, i: u32, slope: f32) -> f32 {
    var v = a[base_a + i * p.a.nb.x] * p.scale;
#ifdef MASK
    v = v + slope * mask_at(base_m + i * p.mask.nb.x);
#endif
    return v;
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let row = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (row >= p.offs.w) {
        return;
    }
    let r = unravel_row(row, p.a.ne);
    let base_a = p.offs.y + dot(r, p.a.nb);
    let base_d = p.offs.x + dot(r, p.dst.nb);
    let base_m = p.offs.z + r.y * p.mask.nb.y;
    let slope = alibi_slope(r.z);
    let n = p.a.ne.x;

    // The lowest finite f32 rather than -inf (WGSL has no infinite constants); a row of
    // -inf logits still ends as NaN, as on the CPU.
    var mx = -3.40282347e38;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        mx = max(mx, logit(base_a, base_m, i, slope));
    }
    mx = reduce_max(lid, mx);

    var sum = 0.0;
    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        sum = sum + exp(logit(base_a, base_m, i, slope) - mx);
    }
    let inv_sum = 1.0 / reduce_sum(lid, sum);

    for (var i = lid; i < n; i = i + {{WG_SIZE}}u) {
        dst[base_d + i * p.dst.nb.x] = exp(logit(base_a, base_m, i, slope) - mx) * inv_sum;
    }
}
