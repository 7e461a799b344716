// CONV_TRANSPOSE_1D and CONV_TRANSPOSE_2D (no padding, no dilation), gathered: each output
// element (one invocation per element of dst) sums, over the input positions whose kernel
// footprint covers it (rows, then columns: the order the CPU backend accumulates them in),
// the dot product of that position's input channels with the kernel tap's channels.
// Kernel a is seen as [Kw, Kh, Cout, Cin], input b as [W, H, Cin, N], dst as
// [OW, OH, Cout, N] (1-D: Kh = H = OH = N = 1). KERNEL_F16: a is f16 (read from 32-bit
// words), and the input is rounded to f16 first, as ggml and the CPU backend do.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // The stride (both dims).
    stride: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef KERNEL_F16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#endif
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

fn load_a(i: u32) -> f32 {
#ifdef KERNEL_F16
    return half_to_f32(a[i / 2u], i);
#else
    return a[i];
#endif
}

fn load_b(i: u32) -> f32 {
#ifdef KERNEL_F16
    return half_to_f32(f32_to_half(b[i]), 0u);
#else
    return b[i];
#endif
}

// The input positions along one dim whose k taps at stride s cover output position o:
// [first, last] clipped to [0, n).
fn first_pos(o: u32, k: u32, s: u32) -> u32 {
    if (o + 1u <= k) {
        return 0u;
    }
    return (o + 1u - k + s - 1u) / s;
}

fn last_pos(o: u32, s: u32, n: u32) -> i32 {
    return min(i32(o / s), i32(n) - 1);
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    let s = p.stride;
    let kw = p.a.ne.x;
    let kh = p.a.ne.y;
    let cin = p.b.ne.z;
    let y_end = last_pos(idx.y, s, p.b.ne.y);
    let x_end = last_pos(idx.x, s, p.b.ne.x);
    var sum = 0.0;
    for (var y = i32(first_pos(idx.y, kh, s)); y <= y_end; y = y + 1) {
        let ty = idx.y - u32(y) * s;
        for (var x = i32(first_pos(idx.x, kw, s)); x <= x_end; x = x + 1) {
            let tx = idx.x - u32(x) * s;
            let at_b = p.offs.z + u32(x) * p.b.nb.x + u32(y) * p.b.nb.y + idx.w * p.b.nb.w;
            let at_a = p.offs.y + tx * p.a.nb.x + ty * p.a.nb.y + idx.z * p.a.nb.z;
            var d = 0.0;
            for (var c = 0u; c < cin; c = c + 1u) {
                d = d + load_b(at_b + c * p.b.nb.z) * load_a(at_a + c * p.a.nb.w);
            }
            sum = sum + d;
        }
    }
    dst[p.offs.x + dot(idx, p.dst.nb)] = sum;
}
