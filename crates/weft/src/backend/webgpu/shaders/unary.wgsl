// Elementwise maps of one f32 tensor with up to four scalar parameters (SCALE: x * s).
// One invocation per element of dst; OP names the function applied.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // The op's scalar parameters.
    f: vec4<f32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in binary.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn op_scale(x: f32) -> f32 { return x * p.f.x; }

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    dst[p.offs.x + dot(idx, p.dst.nb)] = {{OP}}(a[p.offs.y + dot(idx, p.a.nb)]);
}
