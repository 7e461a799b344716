// SSM_CONV (Mamba's depthwise causal conv): dst[i, t, s] = sum_k sx[t + k, i, s] * c[k, i],
// summed in f32 in k order as the CPU backend does. One invocation per element of dst.
#include "common"

struct Params {
    dst: Layout,
    sx: Layout,
    c: Layout,
    // Element offsets of dst, sx and c inside their bindings; w: elements of dst.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> sx: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    // (channel, token, sequence).
    let idx = unravel(i, p.dst.ne);
    let at_sx = p.offs.y + idx.y * p.sx.nb.x + idx.x * p.sx.nb.y + idx.z * p.sx.nb.z;
    let at_c = p.offs.z + idx.x * p.c.nb.y;
    var sum = 0.0;
    for (var k = 0u; k < p.c.ne.x; k = k + 1u) {
        sum = sum + sx[at_sx + k * p.sx.nb.x] * c[at_c + k * p.c.nb.x];
    }
    dst[p.offs.x + dot(idx, p.dst.nb)] = sum;
}
