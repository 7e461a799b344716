// Library (`#include "any_row"`): element reads of a row of one tensor of any type, through
// dequant.wgsl: the includer defines `fn q_word(i: u32) -> u32` (word i of that binding)
// and the type's QT_ flag (ops/quant.rs's qt_flag: float types too), plus A_QUANT for the
// block types. `row` is the byte offset of the row's first element.
//   row4(row, g): elements 4g .. 4g+3 (block types: g < row length / 4, blocks of QK
//                 elements packed along the row; float types, "blocks" of 4: any whole group).
//   row1(row, i): element i (float types only).
#include "dequant"

fn row4(row: u32, g: u32) -> vec4<f32> {
    let per_block = QK / 4u;
    return dq4(row + (g / per_block) * QBYTES, g % per_block);
}

#ifdef QT_F32
fn row1(row: u32, i: u32) -> f32 {
    return bitcast<f32>(q_word(row / 4u + i));
}
#endif

#ifdef QT_F16
fn row1(row: u32, i: u32) -> f32 {
    let h = row / 2u + i;
    return half_to_f32(q_word(h / 2u), h);
}
#endif

#ifdef QT_BF16
fn row1(row: u32, i: u32) -> f32 {
    let h = row / 2u + i;
    return bf16_to_f32(q_word(h / 2u), h);
}
#endif
