// ADD_REL_POS (SAM, f32): row r of a (one query position), seen as an n x n matrix [m][k],
// gets ph[m] + pw[k] from row r of ph and pw (n = pw.ne0), added in the order ggml's loop
// reaches them: ph first where m <= k, pw first otherwise. Rows of a past pw's rows are
// copied unchanged. One invocation per element, each read before it is written: safe in
// place.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    pw: Layout,
    // Element offsets of dst, a and pw inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    ph: Layout,
    // x: element offset of ph.
    ph_offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> pw: array<f32>;
@group(0) @binding(3) var<storage, read_write> ph: array<f32>;
@group(0) @binding(4) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    var v = a[p.offs.y + dot(idx, p.a.nb)];
    let row = idx.y + p.a.ne.y * (idx.z + p.a.ne.z * idx.w);
    let n = p.pw.ne.x;
    if (n > 0u && row < p.pw.ne.y * p.pw.ne.z * p.pw.ne.w) {
        let j = unravel_row(row, p.pw.ne);
        let m = idx.x / n;
        let k = idx.x % n;
        let vh = ph[p.ph_offs.x + dot(j, p.ph.nb) + m * p.ph.nb.x];
        let vw = pw[p.offs.z + dot(j, p.pw.nb) + k * p.pw.nb.x];
        if (m <= k) {
            v = (v + vh) + vw;
        } else {
            v = (v + vw) + vh;
        }
    }
    dst[p.offs.x + dot(idx, p.dst.nb)] = v;
}
