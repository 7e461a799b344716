// SUM: every element of a added into dst's single element, of a's type (f32, or f16/bf16
// through load_a's A_F16/A_BF16 with DST_HALF, written back rounded as ggml rounds). One workgroup walks
// the whole tensor in any layout.
//
// Precision: ggml adds f32 rows in f64 (ggml_vec_sum_f32) and f16/bf16 ones in f32. Here
// every invocation adds its strided share in f32 and a tree adds the shares: the error is
// a few ulps of the sum of magnitudes (n/WG_SIZE + log2(WG_SIZE) roundings), far inside
// the suite's NMSE bound of 1e-7 (about 3e-4 relative), so f64 is not emulated.
#include "load_a"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: elements of a.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// DST_HALF (with A_F16 or A_BF16): dst is a 16-bit float, written into half a word.
#ifdef DST_HALF
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#endif

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let lid = inv.lid;
    var s = 0.0;
    for (var i = lid; i < p.offs.w; i = i + {{WG_SIZE}}u) {
        s = s + load_a(p.offs.y + dot(unravel(i, p.a.ne), p.a.nb));
    }
    let total = reduce_sum(lid, s);
    if (lid != 0u) {
        return;
    }
#ifndef DST_HALF
    dst[p.offs.x] = total;
#else
    // One half of a 32-bit word: keep the other half (another tensor's, perhaps).
#ifdef A_F16
    let bits = f32_to_half(total);
#else
    let bits = f32_to_bf16(total);
#endif
    let w = p.offs.x / 2u;
    let shift = 16u * (p.offs.x % 2u);
    dst[w] = (dst[w] & ~(0xffffu << shift)) | (bits << shift);
#endif
}
