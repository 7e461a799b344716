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

// Index lanes of the (value, index) and integer reductions below.
var<workgroup> partial_idx: array<u32, {{WG_SIZE}}>;

// reduce_argmax's index of an invocation that saw no element.
const ARGMAX_NONE: u32 = 0xffffffffu;

// The index of the largest value: of equal values the larger index (ggml's argmax keeps
// the last of equal maxima); ARGMAX_NONE loses to everything, and is the answer only if
// every invocation passed it. NaN never wins (comparisons with it are false); callers that
// must follow ggml on NaN handle it themselves.
fn reduce_argmax(lid: u32, v: f32, i: u32) -> u32 {
    partial[lid] = v;
    partial_idx[lid] = i;
    workgroupBarrier();
    for (var s = {{WG_SIZE}}u / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            let w = partial[lid + s];
            let j = partial_idx[lid + s];
            let mine = partial_idx[lid];
            let wins = j != ARGMAX_NONE && (w > partial[lid] || (w == partial[lid] && j > mine));
            if (mine == ARGMAX_NONE || wins) {
                partial[lid] = w;
                partial_idx[lid] = j;
            }
        }
        workgroupBarrier();
    }
    let total = partial_idx[0];
    workgroupBarrier();
    return total;
}

// The largest u32.
fn reduce_max_u32(lid: u32, v: u32) -> u32 {
    partial_idx[lid] = v;
    workgroupBarrier();
    for (var s = {{WG_SIZE}}u / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            partial_idx[lid] = max(partial_idx[lid], partial_idx[lid + s]);
        }
        workgroupBarrier();
    }
    let total = partial_idx[0];
    workgroupBarrier();
    return total;
}

// Exact integer sum (counts), wrapping at 2^32.
fn reduce_sum_u32(lid: u32, v: u32) -> u32 {
    partial_idx[lid] = v;
    workgroupBarrier();
    for (var s = {{WG_SIZE}}u / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            partial_idx[lid] = partial_idx[lid] + partial_idx[lid + s];
        }
        workgroupBarrier();
    }
    let total = partial_idx[0];
    workgroupBarrier();
    return total;
}
