// Library (`#include "any_row"`): element reads of a row of one tensor of any type, bound as
// 32-bit words and addressed in bytes. The includer defines `fn q_word(i: u32) -> u32`
// (word i of that binding) and one type flag: A_F32, A_F16, A_BF16, or A_QUANT with
// dequant.wgsl's QT_ flag (one section each; none defined, nothing is). `row` is the byte
// offset of the row's first element.
//   row4(row, g): elements 4g .. 4g+3 (float types: any count of whole groups; block types:
//                 g < row length / 4, blocks of QK elements packed along the row).
//   row1(row, i): element i (float types only).

#ifdef A_QUANT
#include "dequant"

fn row4(row: u32, g: u32) -> vec4<f32> {
    let per_block = QK / 4u;
    return dq4(row + (g / per_block) * QBYTES, g % per_block);
}
#endif

#ifdef A_F32
fn row1(row: u32, i: u32) -> f32 {
    return bitcast<f32>(q_word(row / 4u + i));
}
#endif

#ifdef A_F16
fn row1(row: u32, i: u32) -> f32 {
    let h = row / 2u + i;
    return half_to_f32(q_word(h / 2u), h);
}
#endif

#ifdef A_BF16
fn row1(row: u32, i: u32) -> f32 {
    let h = row / 2u + i;
    return bf16_to_f32(q_word(h / 2u), h);
}
#endif

#ifndef A_QUANT
#ifdef A_FLOAT
fn row4(row: u32, g: u32) -> vec4<f32> {
    let i = 4u * g;
    return vec4<f32>(row1(row, i), row1(row, i + 1u), row1(row, i + 2u), row1(row, i + 3u));
}
#endif
#endif
