// GET_ROWS_BACK: dst row r (f32) is the sum of the rows i of the gradient a with
// rows[i] == r, added in order of i from 0.0 as the CPU does; one invocation per element of
// dst, each scanning the index vector (the op's index vectors are short). a: f32, or f16
// with SRC_F16. Rows of a past the index vector are ignored.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    rows: Layout,
    // Element offsets of dst, a and rows; w: elements of dst.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef SRC_F16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#endif
@group(0) @binding(2) var<storage, read_write> rows: array<i32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

fn load(e: u32) -> f32 {
#ifdef SRC_F16
    return half_to_f32(a[e / 2u], e);
#else
    return a[e];
#endif
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let d = unravel(i, p.dst.ne);
    var sum = 0.0;
    for (var k = 0u; k < p.rows.ne.x; k = k + 1u) {
        if (rows[p.offs.z + k * p.rows.nb.x] == i32(d.y)) {
            sum = sum + load(p.offs.y + d.x * p.a.nb.x + k * p.a.nb.y);
        }
    }
    dst[p.offs.x + dot(d, p.dst.nb)] = sum;
}
