// IM2COL_BACK: each input position sums the gradients of the im2col columns that copied
// it, kernel row by kernel row (the CPU backend's order); a position a stride skipped gets
// none. dst is seen as [IW, IH, IC, N], the gradient g as [IC*KH*KW, OW, OH, N] (1-D:
// IH = OH = KH = 1). One invocation per element of dst.
#include "common"

struct Params {
    dst: Layout,
    g: Layout,
    // KW, KH, unused, unused.
    kern: vec4<u32>,
    // s0, s1, p0, p1.
    conv: vec4<i32>,
    // d0, d1, unused, unused.
    dil: vec4<i32>,
    // Element offsets of dst and g inside their bindings; w: elements of dst.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> g: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let kw = p.kern.x;
    let kh = p.kern.y;
    let ow = i32(p.g.ne.y);
    let oh = i32(p.g.ne.z);
    var grad = 0.0;
    for (var ky = 0u; ky < kh; ky = ky + 1u) {
        let th = i32(idx.y) + p.conv.w - i32(ky) * p.dil.y;
        if (th % p.conv.y != 0) {
            continue;
        }
        let oy = th / p.conv.y;
        if (oy < 0 || oy >= oh) {
            continue;
        }
        for (var kx = 0u; kx < kw; kx = kx + 1u) {
            let tw = i32(idx.x) + p.conv.z - i32(kx) * p.dil.x;
            if (tw % p.conv.x != 0) {
                continue;
            }
            let ox = tw / p.conv.x;
            if (ox < 0 || ox >= ow) {
                continue;
            }
            let col = (idx.z * kh + ky) * kw + kx;
            grad = grad + g[p.offs.y + dot(vec4<u32>(col, u32(ox), u32(oy), idx.w), p.g.nb)];
        }
    }
    dst[p.offs.x + dot(idx, p.dst.nb)] = grad;
}
