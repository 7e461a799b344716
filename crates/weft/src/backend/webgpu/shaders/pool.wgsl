// POOL_1D and POOL_2D: max (MAX) or average over k0 x k1 windows with stride and padding,
// as the CPU backend computes them: padded positions are skipped, an average still divides
// by k0*k1, a max over padding alone is -FLT_MAX, and windows are walked row by row. 1-D is
// the 2-D case with k1 = s1 = 1, p1 = 0. SRC_F16: the input is f16 (read from 32-bit
// words). One invocation per element of dst.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // k0, k1, s0, s1.
    win: vec4<i32>,
    // p0, p1, unused, unused.
    pad: vec4<i32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef SRC_F16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#endif
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn load_a(i: u32) -> f32 {
#ifdef SRC_F16
    return half_to_f32(a[i / 2u], i);
#else
    return a[i];
#endif
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let x0 = i32(idx.x) * p.win.z - p.pad.x;
    let y0 = i32(idx.y) * p.win.w - p.pad.y;
    let iw = i32(p.a.ne.x);
    let ih = i32(p.a.ne.y);
    let plane = p.offs.y + idx.z * p.a.nb.z + idx.w * p.a.nb.w;
#ifdef MAX
    var acc = -3.40282347e38;
#else
    var acc = 0.0;
#endif
    for (var y = y0; y < y0 + p.win.y; y = y + 1) {
        if (y < 0 || y >= ih) {
            continue;
        }
        for (var x = x0; x < x0 + p.win.x; x = x + 1) {
            if (x < 0 || x >= iw) {
                continue;
            }
            let v = load_a(plane + u32(x) * p.a.nb.x + u32(y) * p.a.nb.y);
#ifdef MAX
            if (v > acc) {
                acc = v;
            }
#else
            acc = acc + v;
#endif
        }
    }
#ifndef MAX
    acc = acc / f32(p.win.x * p.win.y);
#endif
    dst[p.offs.x + dot(idx, p.dst.nb)] = acc;
}
