// SSM_SCAN (Mamba's selective scan), as the CPU backend computes it: per channel i1 and
// sequence i3 (one invocation each), token by token,
//   state = state * exp(softplus(dt) * A) + B * x * softplus(dt),  y = state . C
// with fused multiply-adds where the CPU backend fuses them. The running state lives in
// dst's state block (y for every token first, then each sequence's final states, packed),
// which only this invocation touches.
#include "common"

struct Params {
    s: Layout,
    x: Layout,
    dt: Layout,
    a: Layout,
    b: Layout,
    c: Layout,
    // Element offsets of dst, s, x and dt inside their bindings.
    offs0: vec4<u32>,
    // Element offsets of A, B and C; w: invocations (d_inner * n_seqs).
    offs1: vec4<u32>,
    // d_state, d_inner, n_seq_tokens, n_seqs.
    dims: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> s: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> dt: array<f32>;
@group(0) @binding(4) var<storage, read_write> a: array<f32>;
@group(0) @binding(5) var<storage, read_write> b: array<f32>;
@group(0) @binding(6) var<storage, read_write> c: array<f32>;
@group(0) @binding(7) var<storage, read_write> dst: array<f32>;

// ln(1 + v) for v >= 0, accurate for small v (WGSL has no log1p).
fn log_1p(v: f32) -> f32 {
    let u = 1.0 + v;
    if (u == 1.0) {
        return v;
    }
    return log(u) * (v / (u - 1.0));
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let w = invocation_index(inv, {{WG_SIZE}}u);
    if (w >= p.offs1.w) {
        return;
    }
    let d_state = p.dims.x;
    let d_inner = p.dims.y;
    let n_t = p.dims.z;
    let i1 = w % d_inner;
    let i3 = w / d_inner;
    let states = p.offs0.x + d_inner * n_t * p.dims.w + (i3 * d_inner + i1) * d_state;
    let at_s = p.offs0.y + i1 * p.s.nb.y + i3 * p.s.nb.z;
    for (var i0 = 0u; i0 < d_state; i0 = i0 + 1u) {
        dst[states + i0] = s[at_s + i0 * p.s.nb.x];
    }
    let at_a = p.offs1.x + i1 * p.a.nb.y;
    for (var i2 = 0u; i2 < n_t; i2 = i2 + 1u) {
        let dt_v = dt[p.offs0.w + i1 * p.dt.nb.x + i2 * p.dt.nb.y + i3 * p.dt.nb.z];
        // softplus, linear above 20.
        var sp = dt_v;
        if (dt_v <= 20.0) {
            sp = log_1p(exp(dt_v));
        }
        let x_dt = x[p.offs0.z + i1 * p.x.nb.x + i2 * p.x.nb.y + i3 * p.x.nb.z] * sp;
        let at_b = p.offs1.y + i2 * p.b.nb.y + i3 * p.b.nb.z;
        let at_c = p.offs1.z + i2 * p.c.nb.y + i3 * p.c.nb.z;
        var sum = 0.0;
        for (var i0 = 0u; i0 < d_state; i0 = i0 + 1u) {
            let st = fma(dst[states + i0], exp(sp * a[at_a + i0 * p.a.nb.x]), b[at_b + i0 * p.b.nb.x] * x_dt);
            dst[states + i0] = st;
            sum = fma(st, c[at_c + i0 * p.c.nb.x], sum);
        }
        dst[p.offs0.x + (i3 * n_t + i2) * d_inner + i1] = sum;
    }
}
