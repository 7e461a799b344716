// MUL_MAT for larger n: the tiled GEMM. Each workgroup of 8 x 8 invocations computes a
// 64 x 64 tile of dst (rows i0 of a, columns i1 of b) of one (i2, i3) batch, stepping
// through k 16 at a time: the invocations dequantize a's 64 x 16 slice once into workgroup
// memory (four vec4 chunks each) and load b's likewise, then each accumulates its 8 x 8
// block of outputs in registers from vec4 reads of the two tiles (64 multiply-adds per 4
// tile reads; few barriers per multiply-add, which software rasterizers need). With F16
// and f16 a, a's tile is kept in f16 (exact: the values are f16 already), halving its
// workgroup memory; products and sums stay f32.
#ifdef F16
enable f16;
#endif
#include "mm_common"

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;

// ta[kk * BM / 4 + r / 4][r % 4] is a[tile row r][k0 + kk]; tb likewise for b's columns.
#ifdef TILE_F16
var<workgroup> ta: array<vec4<f16>, 256>;
#else
var<workgroup> ta: array<vec4<f32>, 256>;
#endif
var<workgroup> tb: array<vec4<f32>, 256>;

@compute @workgroup_size(64)
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

    // The loads: chunk lc of the 16-wide k step for tile rows (a) / columns (b)
    // lr0 + 16 q, q = 0 .. 3.
    let lr0 = lid / 4u;
    let lc = lid % 4u;
    var a_base: array<u32, 4>;
    var b_base: array<u32, 4>;
    for (var q = 0u; q < 4u; q = q + 1u) {
        a_base[q] = a_row(min(tm * BM + lr0 + 16u * q, m - 1u), i2, i3);
        b_base[q] = b_row(min(tn * BN + lr0 + 16u * q, n - 1u), i2, i3);
    }
    // The computation: rows 8 ty .. 8 ty + 7, columns 8 tx .. 8 tx + 7 of the tile.
    let tx = lid % 8u;
    let ty = lid / 8u;

    // acc[2 i + h][j] = dst[row 8 ty + i][column 8 tx + 4 h + j]
    var acc: array<vec4<f32>, 16>;
    for (var k0 = 0u; k0 < p.dims.x; k0 = k0 + BK) {
        // Chunks past k (the last step when k is not a multiple of 16) are zeros.
        let ch = k0 / 4u + lc;
        let in_k = 4u * ch < p.dims.x;
        for (var q = 0u; q < 4u; q = q + 1u) {
            let lr = lr0 + 16u * q;
            var av = vec4<f32>(0.0);
            if (in_k && tm * BM + lr < m) {
                av = a_vec4(a_base[q], ch);
            }
            var bv = vec4<f32>(0.0);
            if (in_k && tn * BN + lr < n) {
                bv = b_vec4(b_base[q], ch);
            }
            for (var e = 0u; e < 4u; e = e + 1u) {
                let at = (4u * lc + e) * (BM / 4u) + lr / 4u;
#ifdef TILE_F16
                ta[at][lr % 4u] = f16(av[e]);
#else
                ta[at][lr % 4u] = av[e];
#endif
                tb[at][lr % 4u] = bv[e];
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk = kk + 1u) {
            let a_lo = vec4<f32>(ta[kk * (BM / 4u) + 2u * ty]);
            let a_hi = vec4<f32>(ta[kk * (BM / 4u) + 2u * ty + 1u]);
            let b_lo = tb[kk * (BN / 4u) + 2u * tx];
            let b_hi = tb[kk * (BN / 4u) + 2u * tx + 1u];
            for (var i = 0u; i < 4u; i = i + 1u) {
                acc[2u * i] = acc[2u * i] + a_lo[i] * b_lo;
                acc[2u * i + 1u] = acc[2u * i + 1u] + a_lo[i] * b_hi;
                acc[2u * i + 8u] = acc[2u * i + 8u] + a_hi[i] * b_lo;
                acc[2u * i + 9u] = acc[2u * i + 9u] + a_hi[i] * b_hi;
            }
        }
        workgroupBarrier();
    }

    for (var i = 0u; i < 8u; i = i + 1u) {
        let r = tm * BM + 8u * ty + i;
        for (var j = 0u; j < 8u; j = j + 1u) {
            let c = tn * BN + 8u * tx + j;
            if (r < m && c < n) {
                dst[p.offs.x + r * p.dst.nb.x + c * p.dst.nb.y + i2 * p.dst.nb.z + i3 * p.dst.nb.w] = acc[2u * i + j / 4u][j % 4u];
            }
        }
    }
}
