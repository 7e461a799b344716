// Workgroup-wide reductions (pasted in with `#include "reduce"`): every invocation passes
// its partial value and every invocation gets the total. Call from uniform control flow.
// WG_SIZE must be a power of two.

var<workgroup> partial: array<f32, {{WG_SIZE}}>;

fn reduce_sum(lid: u32, v: f32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var s = {{WG_SIZE}}u / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            partial[lid] = partial[lid] + partial[lid + s];
        }
        workgroupBarrier();
    }
    let total = partial[0];
    // Everyone has read the total before `partial` is reused.
    workgroupBarrier();
    return total;
}

fn reduce_max(lid: u32, v: f32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var s = {{WG_SIZE}}u / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            partial[lid] = max(partial[lid], partial[lid + s]);
        }
        workgroupBarrier();
    }
    let total = partial[0];
    workgroupBarrier();
    return total;
}
