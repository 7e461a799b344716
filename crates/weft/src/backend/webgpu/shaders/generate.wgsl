// Ops that generate f32 values, one invocation per element of dst. OP names the function:
// op_arange (ARANGE: start + step * i) or op_timestep (TIMESTEP_EMBEDDING: columns
// [0, h) are cos(t * freq_j), [h, 2h) sin(t * freq_j), the rest zero, with h = dim / 2 and
// freq_j = exp(-ln(max_period) * j / h) in ggml's order). The timesteps are f32, or
// f16 / bf16 (SRC_F16, SRC_BF16) decoded from 32-bit words.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // ARANGE: start, step. TIMESTEP_EMBEDDING: ln(max_period).
    f: vec4<f32>,
    // TIMESTEP_EMBEDDING: dim / 2.
    n_half: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef TIMESTEPS
#ifdef SRC_F32
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#endif
#endif
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

#ifdef TIMESTEPS
fn timestep(i: u32) -> f32 {
#ifdef SRC_F32
    return a[i];
#endif
#ifdef SRC_F16
    return half_to_f32(a[i / 2u], i);
#endif
#ifdef SRC_BF16
    return bf16_to_f32(a[i / 2u], i);
#endif
}

fn op_timestep(idx: vec4<u32>) -> f32 {
    let nh = p.n_half;
    var j = idx.x;
    if (j >= 2u * nh) {
        return 0.0;
    }
    let is_sin = j >= nh;
    if (is_sin) {
        j = j - nh;
    }
    let freq = exp(-p.f.x * f32(j) / f32(nh));
    let arg = timestep(p.offs.y + idx.y * p.a.nb.x) * freq;
    if (is_sin) {
        return sin(arg);
    }
    return cos(arg);
}
#endif

fn op_arange(idx: vec4<u32>) -> f32 {
    return p.f.x + p.f.y * f32(idx.x);
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    dst[p.offs.x + dot(idx, p.dst.nb)] = {{OP}}(idx);
}
