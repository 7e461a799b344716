// MUL_MAT: dst[i0, i1, i2, i3] = dot(row i0 of a, row i1 of b), f32. a broadcasts over
// b's dims 2 and 3 (b.ne[2] = r2 * a.ne[2], b.ne[3] = r3 * a.ne[3]). Any strides of a
// and b (transposed or permuted views). One invocation per element of dst.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // x: the shared dimension k; y, z: broadcast ratios r2, r3.
    k: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let a_at = p.offs.y + idx.x * p.a.nb.y + (idx.z / p.k.y) * p.a.nb.z + (idx.w / p.k.z) * p.a.nb.w;
    let b_at = p.offs.z + idx.y * p.b.nb.y + idx.z * p.b.nb.z + idx.w * p.b.nb.w;
    // Four partial sums, like a vectorized CPU dot, to shorten the dependency chain.
    var acc = vec4<f32>(0.0);
    let k4 = p.k.x / 4u * 4u;
    for (var k = 0u; k < k4; k = k + 4u) {
        let x = vec4<f32>(
            a[a_at + k * p.a.nb.x],
            a[a_at + (k + 1u) * p.a.nb.x],
            a[a_at + (k + 2u) * p.a.nb.x],
            a[a_at + (k + 3u) * p.a.nb.x],
        );
        let y = vec4<f32>(
            b[b_at + k * p.b.nb.x],
            b[b_at + (k + 1u) * p.b.nb.x],
            b[b_at + (k + 2u) * p.b.nb.x],
            b[b_at + (k + 3u) * p.b.nb.x],
        );
        acc = acc + x * y;
    }
    var s = (acc.x + acc.y) + (acc.z + acc.w);
    for (var k = k4; k < p.k.x; k = k + 1u) {
        s = s + a[a_at + k * p.a.nb.x] * b[b_at + k * p.b.nb.x];
    }
    dst[p.offs.x + dot(idx, p.dst.nb)] = s;
}
