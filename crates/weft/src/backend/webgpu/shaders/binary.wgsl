// ADD, SUB, MUL, DIV with ggml's broadcasting: b repeats over a in every dimension.
// One invocation per element of dst; OP names the function applied.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: elements of dst.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// Every tensor binding is read_write: tensors of one graph usually share one wgpu buffer,
// and a buffer bound both read-only and read-write in one dispatch is a usage conflict.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

fn op_add(x: f32, y: f32) -> f32 { return x + y; }
fn op_sub(x: f32, y: f32) -> f32 { return x - y; }
fn op_mul(x: f32, y: f32) -> f32 { return x * y; }
fn op_div(x: f32, y: f32) -> f32 { return x / y; }

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let x = a[p.offs.y + dot(idx, p.a.nb)];
    let y = b[p.offs.z + dot(idx % p.b.ne, p.b.nb)];
    dst[p.offs.x + dot(idx, p.dst.nb)] = {{OP}}(x, y);
}
