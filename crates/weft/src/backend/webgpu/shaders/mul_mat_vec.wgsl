// MUL_MAT for small n (token generation): the mat-vec kernel. One pass over a's bytes:
// each workgroup computes NR consecutive rows of a (dst's i0) against NC columns of b
// (dst's i1) of one (i2, i3) batch; its invocations stride over the row in 4-element
// chunks (one dequantized vec4 of a per chunk and row, reused for the NC columns), then the
// NR x NC partial sums are reduced across the workgroup: a tree in workgroup memory, or
// with SUBGROUP subgroupAdd within each subgroup and one partial per subgroup.
#ifdef F16
enable f16;
#endif
#include "mm_common"

const NR: u32 = {{NR}}u;
const NC: u32 = {{NC}}u;
const NRC: u32 = {{NR}}u * {{NC}}u;
const WG: u32 = {{WG_SIZE}}u;

// Partial sums: red[v * WG + i] for output v = r * NC + c.
var<workgroup> red: array<f32, {{NR}} * {{NC}} * {{WG_SIZE}}>;

@compute @workgroup_size({{WG_SIZE}})
fn main(
    inv: Invocation,
#ifdef SUBGROUP
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(num_subgroups) n_sg: u32,
#endif
) {
    let g = group_index(inv);
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (g >= p.offs.w) {
        return;
    }
    let lid = inv.lid;
    let m = p.dst.ne.x;
    let n = p.dst.ne.y;
    let rb = g % p.dims.w;
    let t = g / p.dims.w;
    let cb = t % p.dims2.x;
    let bt = t / p.dims2.x;
    let i2 = bt % p.dst.ne.z;
    let i3 = bt / p.dst.ne.z;
    let r0 = rb * NR;
    let c0 = cb * NC;

    var arow: array<u32, NR>;
    for (var r = 0u; r < NR; r = r + 1u) {
        arow[r] = a_row(min(r0 + r, m - 1u), i2, i3);
    }
    var brow: array<u32, NC>;
    for (var c = 0u; c < NC; c = c + 1u) {
        brow[c] = b_row(min(c0 + c, n - 1u), i2, i3);
    }

    var acc: array<f32, NRC>;
    let chunks = (p.dims.x + 3u) / 4u;
    for (var ch = lid; ch < chunks; ch = ch + WG) {
        var bv: array<vec4<f32>, NC>;
        for (var c = 0u; c < NC; c = c + 1u) {
            if (c0 + c < n) {
                bv[c] = b_vec4(brow[c], ch);
            }
        }
        for (var r = 0u; r < NR; r = r + 1u) {
            if (r0 + r < m) {
                let av = a_vec4(arow[r], ch);
                for (var c = 0u; c < NC; c = c + 1u) {
                    acc[r * NC + c] = acc[r * NC + c] + dot(av, bv[c]);
                }
            }
        }
    }

#ifdef SUBGROUP
    for (var v = 0u; v < NRC; v = v + 1u) {
        let s = subgroupAdd(acc[v]);
        if (sg_lane == 0u) {
            red[v * WG + sg_id] = s;
        }
    }
    workgroupBarrier();
    let parts = n_sg;
#else
    for (var v = 0u; v < NRC; v = v + 1u) {
        red[v * WG + lid] = acc[v];
    }
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            for (var v = 0u; v < NRC; v = v + 1u) {
                red[v * WG + lid] = red[v * WG + lid] + red[v * WG + lid + s];
            }
        }
        workgroupBarrier();
    }
    let parts = 1u;
#endif
    if (lid < NRC) {
        let r = r0 + lid / NC;
        let c = c0 + lid % NC;
        if (r < m && c < n) {
            var s = 0.0;
            for (var i = 0u; i < parts; i = i + 1u) {
                s = s + red[lid * WG + i];
            }
            dst[p.offs.x + r * p.dst.nb.x + c * p.dst.nb.y + i2 * p.dst.nb.z + i3 * p.dst.nb.w] = s;
        }
    }
}
