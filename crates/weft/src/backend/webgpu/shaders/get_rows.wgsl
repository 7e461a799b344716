// GET_ROWS: dst row (i10, i11, i12) is row rows[i10, i11, i12] of src's slice (i11, i12)
// along dims 2 and 3, widened to f32 (i32 rows stay i32). Two forms:
// - DQ (with one QT_<TYPE> flag of dequant.wgsl): rows of whole blocks, one invocation per
//   four elements, decoded by dq4. Every quantized type, and f32/f16/bf16 rows that are
//   packed and a multiple of 4 long. src's strides are in bytes here.
// - otherwise one invocation per element of any plain layout: SRC_F16, SRC_BF16, or f32/i32
//   bits copied as they are. src's strides are in elements.
// An index outside src's rows gives zeros (the CPU reports an error; a shader cannot).
#include "common"

struct Params {
    dst: Layout,
    src: Layout,
    rows: Layout,
    // Offsets of dst (elements), src (bytes for DQ, elements otherwise) and rows (elements);
    // w: invocations that do work.
    offs: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> rows: array<i32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

// The source row of dst row (_, i10, i11, i12), or -1 when the index is out of range.
fn source_row(d: vec4<u32>) -> i32 {
    let row = rows[p.offs.z + d.y * p.rows.nb.x + d.z * p.rows.nb.y + d.w * p.rows.nb.z];
    if (row < 0 || u32(row) >= p.src.ne.y) {
        return -1;
    }
    return row;
}

#ifdef DQ
fn q_word(i: u32) -> u32 {
    return src[i];
}
#include "dequant"

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let per_row = p.src.ne.x / 4u;
    let d = unravel_row(i / per_row, p.dst.ne);
    let j4 = i % per_row;
    let row = source_row(d);
    var v = vec4<f32>(0.0);
    if (row >= 0) {
        let block = p.offs.y + u32(row) * p.src.nb.y + d.z * p.src.nb.z + d.w * p.src.nb.w
            + (j4 / (QK / 4u)) * QBYTES;
        v = dq4(block, j4 % (QK / 4u));
    }
    let o = p.offs.x + dot(d, p.dst.nb) + 4u * j4 * p.dst.nb.x;
    dst[o] = bitcast<u32>(v.x);
    dst[o + p.dst.nb.x] = bitcast<u32>(v.y);
    dst[o + 2u * p.dst.nb.x] = bitcast<u32>(v.z);
    dst[o + 3u * p.dst.nb.x] = bitcast<u32>(v.w);
}
#else

// Element e of src as the bits of dst's element.
fn load(e: u32) -> u32 {
#ifdef SRC_F16
    return bitcast<u32>(half_to_f32(src[e / 2u], e));
#else
#ifdef SRC_BF16
    return bitcast<u32>(bf16_to_f32(src[e / 2u], e));
#else
    return src[e];
#endif
#endif
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let d = unravel(i, p.dst.ne);
    let row = source_row(d);
    var v = 0u;
    if (row >= 0) {
        v = load(p.offs.y + d.x * p.src.nb.x + u32(row) * p.src.nb.y + d.z * p.src.nb.z + d.w * p.src.nb.w);
    }
    dst[p.offs.x + dot(d, p.dst.nb)] = v;
}
#endif
