// The float source `a` at @binding(1) of any float type, read as f32 (pasted in with
// `#include "load_a"`, which brings common with it: include it instead of common): f32 by
// default; A_F16 or A_BF16 bind it as 32-bit words of two elements each. `load_a(i)` takes
// an element index.
#include "common"

#ifdef A_F16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn load_a(i: u32) -> f32 {
    return half_to_f32(a[i / 2u], i);
}
#else
#ifdef A_BF16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn load_a(i: u32) -> f32 {
    return bf16_to_f32(a[i / 2u], i);
}
#else
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
fn load_a(i: u32) -> f32 {
    return a[i];
}
#endif
#endif
