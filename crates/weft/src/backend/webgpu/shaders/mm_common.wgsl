// What the MUL_MAT kernels (mul_mat_vec.wgsl, mul_mm.wgsl) share (pasted in with
// `#include "mm_common"`, which includes "common"): the params block, the bindings of a, b and dst,
// and loads of four consecutive k-elements of a row of a or b as a vec4<f32>.
//
// a's type is one flag: A_F32, A_F16, A_BF16 (element strides, any layout) or A_Q with
// dequant.wgsl's QT_<TYPE> (blocks packed along a row; rows at any byte stride, offsets and
// strides of a in bytes). b is f32, or f16 with B_F16. F16 (the adapter has SHADER_F16)
// reads f16 operands through native f16 storage instead of decoding halves from u32 words.
// Results are f32, accumulated in f32 in every variant.
#include "common"

struct Params {
    dst: Layout,
    // ne and nb in elements; for A_Q, nb in bytes.
    a: Layout,
    b: Layout,
    // Offsets of dst, a (bytes for A_Q) and b inside their bindings; w: workgroups.
    offs: vec4<u32>,
    // x: k (a.ne[0]); y, z: broadcast ratios r2 = b.ne[2] / a.ne[2], r3; w: row blocks.
    dims: vec4<u32>,
    // x: column blocks.
    dims2: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in binary.wgsl.
#ifdef A_Q
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn q_word(i: u32) -> u32 {
    return a[i];
}
#include "dequant"
#else
#ifdef A_F16
#ifdef F16
@group(0) @binding(1) var<storage, read_write> a: array<f16>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#endif
#else
#ifdef A_BF16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#endif
#endif
#endif
#ifdef B_F16
#ifdef F16
@group(0) @binding(2) var<storage, read_write> b: array<f16>;
#else
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
#endif
#else
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
#endif
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

// Where row (i1, i2, i3) of a starts: bytes for A_Q, elements otherwise. i2 and i3 are
// dst's (b's) batch indices; a is broadcast over them.
fn a_row(i1: u32, i2: u32, i3: u32) -> u32 {
    return p.offs.y + i1 * p.a.nb.y + (i2 / p.dims.y) * p.a.nb.z + (i3 / p.dims.z) * p.a.nb.w;
}

fn b_row(i1: u32, i2: u32, i3: u32) -> u32 {
    return p.offs.z + i1 * p.b.nb.y + i2 * p.b.nb.z + i3 * p.b.nb.w;
}

#ifdef A_Q
// Elements 4c .. 4c+3 of the row starting at byte `row`: k is a multiple of the block.
fn a_vec4(row: u32, c: u32) -> vec4<f32> {
    let per = QK / 4u;
    return dq4(row + (c / per) * QBYTES, c % per);
}
#else
fn a_elem(row: u32, i: u32) -> f32 {
    let e = row + i * p.a.nb.x;
#ifdef A_F16
#ifdef F16
    return f32(a[e]);
#else
    return half_to_f32(a[e / 2u], e);
#endif
#else
#ifdef A_BF16
    return bf16_to_f32(a[e / 2u], e);
#else
    return a[e];
#endif
#endif
}

// Elements 4c .. 4c+3 of the row starting at element `row`, zeros past k.
fn a_vec4(row: u32, c: u32) -> vec4<f32> {
    let i = 4u * c;
    if (i + 3u < p.dims.x) {
        return vec4<f32>(a_elem(row, i), a_elem(row, i + 1u), a_elem(row, i + 2u), a_elem(row, i + 3u));
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (i + j < p.dims.x) {
            v[j] = a_elem(row, i + j);
        }
    }
    return v;
}
#endif

fn b_elem(row: u32, i: u32) -> f32 {
    let e = row + i * p.b.nb.x;
#ifdef B_F16
#ifdef F16
    return f32(b[e]);
#else
    return half_to_f32(b[e / 2u], e);
#endif
#else
    return b[e];
#endif
}

// Elements 4c .. 4c+3 of b's row starting at element `row`, zeros past k.
fn b_vec4(row: u32, c: u32) -> vec4<f32> {
    let i = 4u * c;
    if (i + 3u < p.dims.x) {
        return vec4<f32>(b_elem(row, i), b_elem(row, i + 1u), b_elem(row, i + 2u), b_elem(row, i + 3u));
    }
    var v = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (i + j < p.dims.x) {
            v[j] = b_elem(row, i + j);
        }
    }
    return v;
}
