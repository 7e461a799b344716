// OPT_STEP_ADAMW: one AdamW step, in place on the parameter w and the moments m and v, from
// the gradient g (f32, same shape, any layout), one invocation per element:
//   m = m*beta1 + g*(1 - beta1);   v = v*beta2 + g*g*(1 - beta2)
//   w = w*keep - (m*beta1h) / (sqrt(v*beta2h) + eps)
// with keep = 1 - alpha*wd and the bias corrections beta1h = alpha/(1 - beta1^t), beta2h =
// 1/(1 - beta2^t) worked on the host as the CPU backend works them. The multiply-adds are
// fused (fma) where ggml's build fuses them, as the CPU backend does.
#include "common"

struct Params {
    w: Layout,
    g: Layout,
    m: Layout,
    v: Layout,
    // Element offsets of w, g, m and v inside their bindings.
    offs: vec4<u32>,
    n: u32,
    beta1: f32,
    beta2: f32,
    one_minus_beta1: f32,
    one_minus_beta2: f32,
    beta1h: f32,
    beta2h: f32,
    eps: f32,
    keep: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.n) {
        return;
    }
    let idx = unravel(i, p.w.ne);
    let iw = p.offs.x + dot(idx, p.w.nb);
    let im = p.offs.z + dot(idx, p.m.nb);
    let iv = p.offs.w + dot(idx, p.v.nb);
    let gi = g[p.offs.y + dot(idx, p.g.nb)];
    let mi = fma(m[im], p.beta1, gi * p.one_minus_beta1);
    let vi = fma(v[iv], p.beta2, gi * gi * p.one_minus_beta2);
    m[im] = mi;
    v[iv] = vi;
    let mh = mi * p.beta1h;
    let vh = sqrt(vi * p.beta2h) + p.eps;
    w[iw] = fma(w[iw], p.keep, -(mh / vh));
}
