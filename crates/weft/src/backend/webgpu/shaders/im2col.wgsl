// IM2COL: unfold the patches a convolution reads, one dst row per output position, as the
// CPU backend does. b is seen as [IW, IH, IC, N] (1-D: IH = 1), dst as
// [IC*KH*KW, OW, OH, N] (1-D: OH = 1), packed. Positions in the padding read as 0.
// SRC_F16: b is f16 (read from 32-bit words). OUT_F16: dst is f16, rounded to nearest
// even; then one invocation writes one 32-bit word (two halves), keeping the halves
// outside dst as they were, so no two invocations write the same word.
#include "common"

struct Params {
    b: Layout,
    // KW, KH, IC, unused.
    kern: vec4<u32>,
    // OW, OH, N, elements of dst.
    out: vec4<u32>,
    // s0, s1, p0, p1.
    conv: vec4<i32>,
    // d0, d1, unused, unused.
    dil: vec4<i32>,
    // Element offsets of dst and b inside their bindings; z: invocations.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef SRC_F16
@group(0) @binding(1) var<storage, read_write> b: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
#endif
#ifdef OUT_F16
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#endif

fn load_b(i: u32) -> f32 {
#ifdef SRC_F16
    return half_to_f32(b[i / 2u], i);
#else
    return b[i];
#endif
}

// Element e of dst (flat index).
fn value(e: u32) -> f32 {
    let kw = p.kern.x;
    let kh = p.kern.y;
    let k = kw * kh * p.kern.z;
    let col = e % k;
    let r = e / k;
    let iow = r % p.out.x;
    let r2 = r / p.out.x;
    let ioh = r2 % p.out.y;
    let n = r2 / p.out.y;
    let ikw = col % kw;
    let ikh = (col / kw) % kh;
    let iic = col / (kw * kh);
    let iiw = i32(iow) * p.conv.x + i32(ikw) * p.dil.x - p.conv.z;
    let iih = i32(ioh) * p.conv.y + i32(ikh) * p.dil.y - p.conv.w;
    if (iiw < 0 || iih < 0 || iiw >= i32(p.b.ne.x) || iih >= i32(p.b.ne.y)) {
        return 0.0;
    }
    return load_b(p.offs.y + dot(vec4<u32>(u32(iiw), u32(iih), iic, n), p.b.nb));
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.z) {
        return;
    }
#ifdef OUT_F16
    let word = p.offs.x / 2u + i;
    var bits = dst[word];
    for (var h = 0u; h < 2u; h = h + 1u) {
        let m = 2u * word + h;
        if (m >= p.offs.x && m - p.offs.x < p.out.w) {
            let shift = 16u * h;
            bits = (bits & ~(0xffffu << shift)) | (f32_to_half(value(m - p.offs.x)) << shift);
        }
    }
    dst[word] = bits;
#else
    dst[p.offs.x + i] = value(i);
#endif
}
