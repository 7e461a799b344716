// POOL_2D_BACK: the gradient g of a POOL_2D output scattered back over the pool's input x,
// gathered here: each input position (one invocation per element of dst, which has x's
// shape) sums, over the windows covering it in row-major order (the CPU backend's order),
// g / (k0*k1) for average pooling, or g when it is the window's first largest input for
// max pooling (MAX; strictly greater wins from -FLT_MAX, and a NaN takes the max, as in
// ggml). X_F16: x is f16 (read from 32-bit words).
#include "common"

struct Params {
    dst: Layout,
    g: Layout,
    x: Layout,
    // Element offsets of dst, g and x inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // k0, k1, s0, s1.
    win: vec4<i32>,
    // p0, p1, unused, unused.
    pad: vec4<i32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> g: array<f32>;
#ifdef X_F16
@group(0) @binding(2) var<storage, read_write> xs: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> xs: array<f32>;
#endif
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

fn load_x(i: u32) -> f32 {
#ifdef X_F16
    return half_to_f32(xs[i / 2u], i);
#else
    return xs[i];
#endif
}

// The first window (0-based output index) along one dim that covers input position `pos`.
fn first_window(pos: i32, k: i32, s: i32, pad: i32) -> i32 {
    let n = pos + pad - k + 1;
    if (n <= 0) {
        return 0;
    }
    return (n + s - 1) / s;
}

// The last window covering `pos` (below `first_window` when none does), at most count - 1.
fn last_window(pos: i32, s: i32, pad: i32, count: i32) -> i32 {
    let m = pos + pad;
    if (m < 0) {
        return -1;
    }
    return min(m / s, count - 1);
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let x = i32(idx.x);
    let y = i32(idx.y);
    let k0 = p.win.x;
    let k1 = p.win.y;
    let s0 = p.win.z;
    let s1 = p.win.w;
    let gplane = p.offs.y + idx.z * p.g.nb.z + idx.w * p.g.nb.w;
#ifdef MAX
    let iw = i32(p.dst.ne.x);
    let ih = i32(p.dst.ne.y);
    let xplane = p.offs.z + idx.z * p.x.nb.z + idx.w * p.x.nb.w;
#endif
    var acc = 0.0;
    let oy_end = last_window(y, s1, p.pad.y, i32(p.g.ne.y));
    let ox_end = last_window(x, s0, p.pad.x, i32(p.g.ne.x));
    for (var oy = first_window(y, k1, s1, p.pad.y); oy <= oy_end; oy = oy + 1) {
        for (var ox = first_window(x, k0, s0, p.pad.x); ox <= ox_end; ox = ox + 1) {
            let grad = g[gplane + u32(ox) * p.g.nb.x + u32(oy) * p.g.nb.y];
#ifdef MAX
            // This window's first largest input.
            let wx = ox * s0 - p.pad.x;
            let wy = oy * s1 - p.pad.y;
            var best = -3.40282347e38;
            var bx = -1;
            var by = -1;
            for (var ky = 0; ky < k1; ky = ky + 1) {
                let yy = wy + ky;
                if (yy < 0 || yy >= ih) {
                    continue;
                }
                for (var kx = 0; kx < k0; kx = kx + 1) {
                    let xx = wx + kx;
                    if (xx < 0 || xx >= iw) {
                        continue;
                    }
                    let v = load_x(xplane + u32(xx) * p.x.nb.x + u32(yy) * p.x.nb.y);
                    if (!(v <= best)) {
                        best = v;
                        bx = xx;
                        by = yy;
                    }
                }
            }
            if (bx == x && by == y) {
                acc = acc + grad;
            }
#else
            acc = acc + grad / f32(k0 * k1);
#endif
        }
    }
    dst[p.offs.x + dot(idx, p.dst.nb)] = acc;
}
