// What the MUL_MAT kernels (mul_mat_vec.wgsl, mul_mm.wgsl) share (pasted in with
// `#include "mm_common"`, which includes "common"): the params block, the bindings of a, b
// and dst, and loads of four consecutive k-elements of a row of a or b as a vec4<f32>.
//
// a's type is one flag: A_F32, A_F16, A_BF16 (element strides, any layout) or A_Q with
// dequant.wgsl's QT_<TYPE> (blocks packed along a row; rows at any byte stride, offsets and
// strides of a in bytes). b is f32, or f16 with B_F16. F16 (the adapter has SHADER_F16)
// reads f16 operands through native f16 storage instead of decoding halves from u32 words.
// A_VEC4 / B_VEC4 (float operands whose rows are contiguous and start at multiples of 4
// elements, k a multiple of 4): the operand is bound as an array of 4-element vectors and
// each chunk is one vector load. Results are f32, accumulated in f32 in every variant.
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
// read_write for the reason given in elementwise.wgsl.
#ifdef A_Q
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn q_word(i: u32) -> u32 {
    return a[i];
}
#include "dequant"
#else
#ifdef A_F32
#ifdef A_VEC4
@group(0) @binding(1) var<storage, read_write> a: array<vec4<f32>>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
#endif
#else
// f16 or bf16.
#ifdef A_VEC4
#ifdef A_F16_NATIVE
@group(0) @binding(1) var<storage, read_write> a: array<vec4<f16>>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<vec2<u32>>;
#endif
#else
#ifdef A_F16_NATIVE
@group(0) @binding(1) var<storage, read_write> a: array<f16>;
#else
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
#endif
#endif
#endif
#endif
#ifdef B_F16
#ifdef B_VEC4
#ifdef F16
@group(0) @binding(2) var<storage, read_write> b: array<vec4<f16>>;
#else
@group(0) @binding(2) var<storage, read_write> b: array<vec2<u32>>;
#endif
#else
#ifdef F16
@group(0) @binding(2) var<storage, read_write> b: array<f16>;
#else
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
#endif
#endif
#else
#ifdef B_VEC4
@group(0) @binding(2) var<storage, read_write> b: array<vec4<f32>>;
#else
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
#endif
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

// Four halves (f16, or bf16 with A_BF16) packed in two words, as f32.
fn halves4(w: vec2<u32>, bf: bool) -> vec4<f32> {
    if (bf) {
        return vec4<f32>(bf16_to_f32(w.x, 0u), bf16_to_f32(w.x, 1u), bf16_to_f32(w.y, 0u), bf16_to_f32(w.y, 1u));
    }
    return vec4<f32>(half_to_f32(w.x, 0u), half_to_f32(w.x, 1u), half_to_f32(w.y, 0u), half_to_f32(w.y, 1u));
}

#ifdef A_Q
// Elements 4c .. 4c+3 of the row starting at byte `row`: k is a multiple of the block.
fn a_vec4(row: u32, c: u32) -> vec4<f32> {
    let per = QK / 4u;
    return dq4(row + (c / per) * QBYTES, c % per);
}
#else
#ifdef A_VEC4
// Elements 4c .. 4c+3 of the row starting at element `row` (a multiple of 4): one load.
fn a_vec4(row: u32, c: u32) -> vec4<f32> {
#ifdef A_F32
    return a[row / 4u + c];
#else
#ifdef A_F16_NATIVE
    return vec4<f32>(a[row / 4u + c]);
#else
#ifdef A_BF16
    return halves4(a[row / 4u + c], true);
#else
    return halves4(a[row / 4u + c], false);
#endif
#endif
#endif
}
#else
fn a_elem(row: u32, i: u32) -> f32 {
    let e = row + i * p.a.nb.x;
#ifdef A_F32
    return a[e];
#else
#ifdef A_F16_NATIVE
    return f32(a[e]);
#else
#ifdef A_BF16
    return bf16_to_f32(a[e / 2u], e);
#else
    return half_to_f32(a[e / 2u], e);
#endif
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
#endif

#ifdef B_VEC4
// Elements 4c .. 4c+3 of b's row starting at element `row` (a multiple of 4): one load.
fn b_vec4(row: u32, c: u32) -> vec4<f32> {
#ifdef B_F16
#ifdef F16
    return vec4<f32>(b[row / 4u + c]);
#else
    return halves4(b[row / 4u + c], false);
#endif
#else
    return b[row / 4u + c];
#endif
}
#else
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
#endif
