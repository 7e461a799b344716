// GROUP_NORM: each group of channels (dim 2) of each sample (dim 3) normalized over all
// its ne0*ne1*channels elements, as ggml: ceil(channels / n_groups) channels per group
// (the last groups short or empty), the mean, then the variance of the f32 differences.
// One workgroup per (sample, group); safe in place (every element is read and written by
// the same invocation). f32 sums and a tree, for the reason given in sum.wgsl.
#include "common"
#include "reduce"

struct Params {
    dst: Layout,
    a: Layout,
    // Element offsets of dst and a inside their bindings; w: samples * n_groups.
    offs: vec4<u32>,
    n_groups: u32,
    per_group: u32,
    eps: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

// Element j of the group starting at channel `start` of sample i3 -> (i0, i1, i2, i3).
fn coords(j: u32, start: u32, i3: u32) -> vec4<u32> {
    let t = j / p.a.ne.x;
    return vec4<u32>(j % p.a.ne.x, t % p.a.ne.y, start + t / p.a.ne.y, i3);
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let task = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (task >= p.offs.w) {
        return;
    }
    let i3 = task / p.n_groups;
    let g = task % p.n_groups;
    let start = min(g * p.per_group, p.a.ne.z);
    let end = min(start + p.per_group, p.a.ne.z);
    if (start == end) {
        return;
    }
    let count = p.a.ne.x * p.a.ne.y * (end - start);
    var sum = 0.0;
    for (var j = lid; j < count; j = j + {{WG_SIZE}}u) {
        sum = sum + a[p.offs.y + dot(coords(j, start, i3), p.a.nb)];
    }
    let mean = reduce_sum(lid, sum) / f32(count);
    var sum2 = 0.0;
    for (var j = lid; j < count; j = j + {{WG_SIZE}}u) {
        let d = a[p.offs.y + dot(coords(j, start, i3), p.a.nb)] - mean;
        sum2 = sum2 + d * d;
    }
    let variance = reduce_sum(lid, sum2) / f32(count);
    let scale = 1.0 / sqrt(variance + p.eps);
    for (var j = lid; j < count; j = j + {{WG_SIZE}}u) {
        let c = coords(j, start, i3);
        dst[p.offs.x + dot(c, p.dst.nb)] = (a[p.offs.y + dot(c, p.a.nb)] - mean) * scale;
    }
}
