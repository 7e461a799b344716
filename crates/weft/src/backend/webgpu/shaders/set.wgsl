// SET and ACC: dst is a copy of a (both contiguous) with b written (SET) or added (ACC,
// f32) into a window of it: b's shape at element strides win_nb and element offset
// win_off. One invocation per element of dst, which finds the element of b it holds, if any:
// the window's strides come sorted largest first, each at least the extent of the smaller
// ones (the kernel refuses overlapping windows), so dividing by them in turn recovers b's
// coordinates. Safe in place (dst = a): each invocation reads and writes its own element.
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // The window's strides in elements, largest first, and the extent and dim of b each
    // steps (unused entries: stride 1, extent 1).
    win_nb: vec4<u32>,
    win_ne: vec4<u32>,
    win_dim: vec4<u32>,
    // x: the window's offset in elements.
    win_off: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> a: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> b: array<{{T}}>;
@group(0) @binding(3) var<storage, read_write> dst: array<{{T}}>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
    if (i >= p.offs.w) {
        return;
    }
    let x = a[p.offs.y + i];
    var v = x;
    if (i >= p.win_off.x) {
        var rel = i - p.win_off.x;
        var bi = vec4<u32>(0u);
        var inside = true;
        for (var k = 0u; k < 4u; k = k + 1u) {
            let q = rel / p.win_nb[k];
            inside = inside && q < p.win_ne[k];
            bi[p.win_dim[k]] = q;
            rel = rel - q * p.win_nb[k];
        }
        if (inside) {
            let y = b[p.offs.z + dot(bi, p.b.nb)];
#ifdef ACC
            v = x + y;
#else
            v = y;
#endif
        }
    }
    dst[p.offs.x + i] = v;
}
