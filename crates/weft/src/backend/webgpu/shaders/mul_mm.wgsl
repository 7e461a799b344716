// MUL_MAT for larger n: the tiled GEMM. Each workgroup of 16 x 16 invocations computes a
// 64 x 64 tile of dst (rows i0 of a, columns i1 of b) of one (i2, i3) batch, stepping
// through k 16 at a time: every invocation loads one 4-element chunk of a (dequantized
// once, into workgroup memory) and one of b, then computes its 4 x 4 outputs from vec4
// reads of the two tiles. With F16 and f16 a, a's tile is kept in f16 (exact: the values
// are f16 already), halving its workgroup memory; products and sums stay f32.
#ifdef F16
enable f16;
#endif
#include "mm_common"

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

#ifdef TILE_F16
alias TileA = vec4<f16>;
alias TileAElem = f16;
#else
alias TileA = vec4<f32>;
alias TileAElem = f32;
#endif

// ta[kk * BM / 4 + r / 4][r % 4] is a[tile row r][k0 + kk]; tb likewise for b's columns.
var<workgroup> ta: array<TileA, 256>;
var<workgroup> tb: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(inv: Invocation) {
    let g = group_index(inv);
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (g >= p.offs.w) {
        return;
    }
    let lid = inv.lid;
    let m = p.dst.ne.x;
    let n = p.dst.ne.y;
    let tm = g % p.dims.w;
    let t = g / p.dims.w;
    let tn = t % p.dims2.x;
    let bt = t / p.dims2.x;
    let i2 = bt % p.dst.ne.z;
    let i3 = bt / p.dst.ne.z;

    // The loads: tile row (a) / column (b) lr, chunk lc of the 16-wide k step.
    let lr = lid / 4u;
    let lc = lid % 4u;
    let a_i = tm * BM + lr;
    let b_i = tn * BN + lr;
    let a_base = a_row(min(a_i, m - 1u), i2, i3);
    let b_base = b_row(min(b_i, n - 1u), i2, i3);
    // The computation: rows 4 ty .. 4 ty + 3, columns 4 tx .. 4 tx + 3 of the tile.
    let tx = lid % 16u;
    let ty = lid / 16u;

    var acc: array<vec4<f32>, 4>;
    for (var k0 = 0u; k0 < p.dims.x; k0 = k0 + BK) {
        var av = vec4<f32>(0.0);
        if (a_i < m) {
            av = a_vec4(a_base, k0 / 4u + lc);
        }
        var bv = vec4<f32>(0.0);
        if (b_i < n) {
            bv = b_vec4(b_base, k0 / 4u + lc);
        }
        for (var e = 0u; e < 4u; e = e + 1u) {
            let at = (4u * lc + e) * (BM / 4u) + lr / 4u;
            ta[at][lr % 4u] = TileAElem(av[e]);
            tb[at][lr % 4u] = bv[e];
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a4 = vec4<f32>(ta[kk * (BM / 4u) + ty]);
            let b4 = tb[kk * (BN / 4u) + tx];
            acc[0] = acc[0] + a4.x * b4;
            acc[1] = acc[1] + a4.y * b4;
            acc[2] = acc[2] + a4.z * b4;
            acc[3] = acc[3] + a4.w * b4;
        }
        workgroupBarrier();
    }

    for (var i = 0u; i < 4u; i = i + 1u) {
        let r = tm * BM + 4u * ty + i;
        for (var j = 0u; j < 4u; j = j + 1u) {
            let c = tn * BN + 4u * tx + j;
            if (r < m && c < n) {
                dst[p.offs.x + r * p.dst.nb.x + c * p.dst.nb.y + i2 * p.dst.nb.z + i3 * p.dst.nb.w] = acc[i][j];
            }
        }
    }
}
