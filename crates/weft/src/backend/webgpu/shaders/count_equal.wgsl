// COUNT_EQUAL: how many elements of the i32 tensors a and b (same shape, any layout) are
// equal, as dst's single i64. One workgroup walks both tensors; the count is exact.
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst (in i64 units), a and b; w: elements of a.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl; i32 values compared as their bits.
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
// The i64 as two 32-bit words, low first.
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let lid = inv.lid;
    var count = 0u;
    for (var i = lid; i < p.offs.w; i = i + {{WG_SIZE}}u) {
        let idx = unravel(i, p.a.ne);
        let x = a[p.offs.y + dot(idx, p.a.nb)];
        let y = b[p.offs.z + dot(idx, p.b.nb)];
        count = count + select(0u, 1u, x == y);
    }
    // At most 2^32 - 1 elements (kernels refuse more), so the count fits the low word.
    let total = reduce_sum_u32(lid, count);
    if (lid == 0u) {
        dst[2u * p.offs.x] = total;
        dst[2u * p.offs.x + 1u] = 0u;
    }
}
