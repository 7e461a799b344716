// The super-block (256-element) quantizers of quantize.wgsl: q2_K, q3_K, q4_K, q5_K, q6_K
// (ggml's quantize_row_<type>_ref and their scale searches make_qkx2_quants,
// make_qx_quants and make_q3_quants) and the ternary tq1_0 and tq2_0, as the engine's CPU
// quantizers compute them (crates/weft/src/types/quant/k.rs, k45.rs, scales.rs, tq.rs):
// where GCC's x86 build fuses a multiply into an add, `fma_exact` here; everywhere else a
// rounded product and a separate add. That reproduces the CPU's bytes on a device that does
// not contract a*b + c by itself (lavapipe does not); a device that does may pick another
// level where two are within a rounding of each other.
// Included by quantize.wgsl after its helpers (x, blk, lv, wts, put_u16, fma_exact, ...).

// The qkx search's scratch copy of one sub-block's levels.
var<private> aux: array<i32, 32>;

const MAGIC: f32 = 12582912.0;

// ggml's nearest_int: adding 1.5 * 2^23 rounds to an integer (ties to even).
fn nearest_int(v: f32) -> i32 {
    return i32(bitcast<u32>(v + MAGIC) & 0x7fffffu) - 0x400000;
}

// nearest_int(a * b) as GCC compiles it: the product fused into the rounding add.
fn nearest_int_prod(a: f32, b: f32) -> i32 {
    return i32(bitcast<u32>(fma_exact(a, b, MAGIC)) & 0x7fffffu) - 0x400000;
}

fn qkx_err(d: f32, use_mad: bool) -> f32 {
    return select(d * d, abs(d), use_mad);
}

// make_qkx2_quants over x[off..off + n] with weights wts: levels 0..nmax into lv, returns
// (scale, -min). nstep + 1 candidate inverse scales (rmin + rdelta * is + nmax) / (max - min),
// each refit by weighted least squares and kept when its weighted error is smaller.
fn make_qkx_quants(nmax: i32, off: u32, n: u32, rmin: f32, rdelta: f32, nstep: i32, use_mad: bool) -> vec2<f32> {
    var mn = x[off];
    var mx = x[off];
    var sum_w = wts[0];
    var sum_x = sum_w * x[off];
    for (var i = 1u; i < n; i = i + 1u) {
        let v = x[off + i];
        if (v < mn) {
            mn = v;
        }
        if (v > mx) {
            mx = v;
        }
        sum_w = sum_w + wts[i];
        sum_x = fma_exact(v, wts[i], sum_x);
    }
    if (mn > 0.0) {
        mn = 0.0;
    }
    if (mx == mn) {
        for (var i = 0u; i < n; i = i + 1u) {
            lv[off + i] = 0;
        }
        return vec2<f32>(0.0, -mn);
    }
    var iscale = f32(nmax) / (mx - mn);
    var scale = 1.0 / iscale;
    var best = 0.0;
    for (var i = 0u; i < n; i = i + 1u) {
        let l = clamp(nearest_int_prod(iscale, x[off + i] - mn), 0, nmax);
        lv[off + i] = l;
        let diff = fma_exact(scale, f32(l), mn) - x[off + i];
        best = fma_exact(qkx_err(diff, use_mad), wts[i], best);
    }
    for (var step = 0; step <= nstep; step = step + 1) {
        iscale = (fma_exact(f32(step), rdelta, rmin) + f32(nmax)) / (mx - mn);
        var sum_l = 0.0;
        var sum_l2 = 0.0;
        var sum_xl = 0.0;
        for (var i = 0u; i < n; i = i + 1u) {
            let l = clamp(nearest_int_prod(iscale, x[off + i] - mn), 0, nmax);
            aux[i] = l;
            let lf = f32(l);
            // w * l feeds three sums, so its own add does not fuse.
            let wl = wts[i] * lf;
            sum_l = sum_l + wl;
            sum_l2 = fma_exact(lf, wl, sum_l2);
            sum_xl = fma_exact(x[off + i], wl, sum_xl);
        }
        // a*b - c*d: GCC fuses one of the two products, a different one in each.
        let det = fma_exact(sum_l2, sum_w, -(sum_l * sum_l));
        if (det > 0.0) {
            var this_min = fma_exact(sum_l2, sum_x, -(sum_l * sum_xl)) / det;
            var this_scale = fma_exact(-sum_l, sum_x, sum_xl * sum_w) / det;
            if (this_min > 0.0) {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            var mad = 0.0;
            for (var i = 0u; i < n; i = i + 1u) {
                let diff = fma_exact(this_scale, f32(aux[i]), this_min) - x[off + i];
                mad = fma_exact(qkx_err(diff, use_mad), wts[i], mad);
            }
            if (mad < best) {
                for (var i = 0u; i < n; i = i + 1u) {
                    lv[off + i] = aux[i];
                }
                best = mad;
                scale = this_scale;
                mn = this_min;
            }
        }
    }
    return vec2<f32>(scale, -mn);
}

// The level of v at inverse scale iscale, in [-nmax, nmax).
fn qx_level(nmax: i32, iscale: f32, v: f32) -> i32 {
    return clamp(nearest_int_prod(iscale, v), -nmax, nmax - 1);
}

// The first fit of make_qx_quants and make_q3_quants over x[off..off + n]: levels at the
// inverse scale -nmax / max, plus `bias`, into lv, and the sums of w x l and w l^2 with
// w = x^2, fused as in GCC's scalar loop. Returns (max, sum w x l, sum w l^2); max is 0 (and
// the levels 0) for a group below GROUP_MAX_EPS.
fn first_fit(nmax: i32, off: u32, n: u32, bias: i32) -> vec3<f32> {
    let m = absmax_of(off, n);
    if (m.y < GROUP_MAX_EPS) {
        for (var i = 0u; i < n; i = i + 1u) {
            lv[off + i] = 0;
        }
        return vec3<f32>(0.0);
    }
    let iscale = -f32(nmax) / m.x;
    var sumlx = 0.0;
    var suml2 = 0.0;
    for (var i = 0u; i < n; i = i + 1u) {
        let v = x[off + i];
        let l = qx_level(nmax, iscale, v);
        lv[off + i] = l + bias;
        let w = v * v;
        let lf = f32(l);
        sumlx = fma_exact(w * v, lf, sumlx);
        suml2 = fma_exact(lf, w * lf, suml2);
    }
    return vec3<f32>(m.x, sumlx, suml2);
}

// make_qx_quants(n, nmax, x, L, 1, NULL) over x[off..off + n]: weights x^2, levels offset by
// nmax into lv; 18 scales tried around nmax / max, the smallest weighted error kept.
fn make_qx_quants(nmax: i32, off: u32, n: u32) -> f32 {
    let f = first_fit(nmax, off, n, nmax);
    if (f.x == 0.0) {
        return 0.0;
    }
    var sumlx = f.y;
    var suml2 = f.z;
    var scale = select(0.0, sumlx / suml2, suml2 != 0.0);
    var best = scale * sumlx;
    for (var k = -9; k <= 9; k = k + 1) {
        if (k == 0) {
            continue;
        }
        let iscale = fma_exact(-f32(k), 0.1, -f32(nmax)) / f.x;
        // Vectorized in GCC's build: products rounded, then added in order.
        sumlx = 0.0;
        suml2 = 0.0;
        for (var i = 0u; i < n; i = i + 1u) {
            let v = x[off + i];
            let lf = f32(qx_level(nmax, iscale, v));
            let w = v * v;
            sumlx = sumlx + w * v * lf;
            suml2 = suml2 + lf * (w * lf);
        }
        if (suml2 > 0.0 && sumlx * sumlx > best * suml2) {
            for (var i = 0u; i < n; i = i + 1u) {
                lv[off + i] = nmax + qx_level(nmax, iscale, x[off + i]);
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// make_q3_quants(n, nmax, x, L, true) over x[off..off + n]: the first fit's levels refined
// one at a time (up to 5 passes); levels offset by nmax into lv.
fn make_q3_quants(nmax: i32, off: u32, n: u32) -> f32 {
    let f = first_fit(nmax, off, n, 0);
    if (f.x == 0.0) {
        return 0.0;
    }
    // Scalar loops throughout: every sum fuses.
    var sumlx = f.y;
    var suml2 = f.z;
    for (var round = 0; round < 5; round = round + 1) {
        var changed = false;
        for (var i = 0u; i < n; i = i + 1u) {
            let v = x[off + i];
            let w = v * v;
            let li = f32(lv[off + i]);
            var slx = fma_exact(-(w * v), li, sumlx);
            if (slx > 0.0) {
                var sl2 = fma_exact(-li, w * li, suml2);
                let new_l = clamp(nearest_int(v * sl2 / slx), -nmax, nmax - 1);
                if (new_l != lv[off + i]) {
                    let nl = f32(new_l);
                    slx = fma_exact(w * v, nl, slx);
                    sl2 = fma_exact(nl, w * nl, sl2);
                    if (sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        lv[off + i] = new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if (!changed) {
            break;
        }
    }
    for (var i = 0u; i < n; i = i + 1u) {
        lv[off + i] = lv[off + i] + nmax;
    }
    return sumlx / suml2;
}

// The symmetric fits of q3_K (make_q3_quants, nmax 4) or q6_K (make_qx_quants, nmax 32) of
// the 16 sub-blocks of 16: levels into lv, scales into `scales`; returns the scale of
// largest magnitude (the first on ties) and that magnitude.
fn fit_16(scales: ptr<function, array<f32, 16>>, q3: bool) -> vec2<f32> {
    var amax = 0.0;
    var max_scale = 0.0;
    for (var j = 0u; j < 16u; j = j + 1u) {
        var s = 0.0;
        if (q3) {
            s = make_q3_quants(4, 16u * j, 16u);
        } else {
            s = make_qx_quants(32, 16u * j, 16u);
        }
        (*scales)[j] = s;
        if (abs(s) > amax) {
            amax = abs(s);
            max_scale = s;
        }
    }
    return vec2<f32>(max_scale, amax);
}

// The running largest scale and min of make_qkx_quants' results (C's `if (a > max) max = a`
// for each).
fn keep_max(top: vec2<f32>, r: vec2<f32>) -> vec2<f32> {
    return select(top, r, r > top);
}

// The 2-bit planes of levels lv (masked to 2 bits after >> shift) into 64 bytes at k0:
// byte j of chunk c holds elements 128 c + 32 p + j in bits 2 p.
fn pack_2bit(k0: u32, shift: u32) {
    for (var c = 0u; c < 2u; c = c + 1u) {
        for (var j = 0u; j < 32u; j = j + 1u) {
            var b = 0u;
            for (var p = 0u; p < 4u; p = p + 1u) {
                b = b | (((bitcast<u32>(lv[128u * c + 32u * p + j]) >> shift) & 3u) << (2u * p));
            }
            blk[k0 + 32u * c + j] = b;
        }
    }
}

#ifdef QZ_Q2_K
// quantize_row_q2_K_ref: a min/scale fit per 16 elements (weights |x|, absolute error),
// 4-bit scales and mins relative to the largest of each, then every element requantized
// against the stored values. Block: scales[16], qs[64], d, dmin.
fn quantize_q2_k() {
    var scales: array<f32, 16>;
    var mins: array<f32, 16>;
    var top = vec2<f32>(0.0);
    for (var j = 0u; j < 16u; j = j + 1u) {
        for (var i = 0u; i < 16u; i = i + 1u) {
            wts[i] = abs(x[16u * j + i]);
        }
        let r = make_qkx_quants(3, 16u * j, 16u, -0.5, 0.1, 15, true);
        scales[j] = r.x;
        mins[j] = r.y;
        top = keep_max(top, r);
    }
    let max_scale = top.x;
    let max_min = top.y;
    var dh = 0u;
    var mh = 0u;
    for (var j = 0u; j < 16u; j = j + 1u) {
        blk[j] = 0u;
    }
    if (max_scale > 0.0) {
        let iscale = 15.0 / max_scale;
        for (var j = 0u; j < 16u; j = j + 1u) {
            blk[j] = bitcast<u32>(nearest_int_prod(iscale, scales[j])) & 0xffu;
        }
        dh = f32_to_half(max_scale / 15.0);
    }
    if (max_min > 0.0) {
        let iscale = 15.0 / max_min;
        for (var j = 0u; j < 16u; j = j + 1u) {
            blk[j] = (blk[j] | (bitcast<u32>(nearest_int_prod(iscale, mins[j])) << 4u)) & 0xffu;
        }
        mh = f32_to_half(max_min / 15.0);
    }
    put_u16(80u, dh);
    put_u16(82u, mh);
    let dm = half_to_f32(dh, 0u);
    let mm = half_to_f32(mh, 0u);
    for (var j = 0u; j < 16u; j = j + 1u) {
        let d = dm * f32(blk[j] & 0xfu);
        if (d == 0.0) {
            continue;
        }
        let m = mm * f32(blk[j] >> 4u);
        for (var i = 0u; i < 16u; i = i + 1u) {
            lv[16u * j + i] = clamp(nearest_int((x[16u * j + i] + m) / d), 0, 3);
        }
    }
    pack_2bit(16u, 0u);
}
#endif

#ifdef QZ_Q3_K
// quantize_row_q3_K_ref: symmetric 3-bit levels per 16 elements, signed 6-bit scales relative
// to the scale of largest magnitude. Block: hmask[32], qs[64], scales[12], d.
fn quantize_q3_k() {
    var scales: array<f32, 16>;
    let max_scale = fit_16(&scales, true).x;
    var ls: array<u32, 16>;
    var d = 0.0;
    if (max_scale != 0.0) {
        let iscale = -32.0 / max_scale;
        for (var j = 0u; j < 16u; j = j + 1u) {
            // (int8_t)nearest_int(...), clamped to -32..31, offset by 32.
            let q = (nearest_int_prod(iscale, scales[j]) << 24u) >> 24u;
            ls[j] = u32(clamp(q, -32, 31) + 32);
        }
        d = 1.0 / iscale;
    }
    // Scales: low nibbles in bytes 0..8 (scales 8..16 in the high halves), the top two bits
    // of scale j in byte 8 + j % 4, bits 2 (j / 4).
    for (var k = 0u; k < 12u; k = k + 1u) {
        blk[96u + k] = 0u;
    }
    for (var j = 0u; j < 16u; j = j + 1u) {
        if (j < 8u) {
            blk[96u + j] = ls[j] & 0xfu;
        } else {
            blk[96u + j - 8u] = blk[96u + j - 8u] | ((ls[j] & 0xfu) << 4u);
        }
        blk[96u + 8u + j % 4u] = blk[96u + 8u + j % 4u] | ((ls[j] >> 4u) << (2u * (j / 4u)));
    }
    let dh = f32_to_half(d);
    put_u16(108u, dh);
    let dall = half_to_f32(dh, 0u);
    for (var j = 0u; j < 16u; j = j + 1u) {
        let dl = dall * f32(i32(ls[j]) - 32);
        if (dl == 0.0) {
            continue;
        }
        for (var i = 0u; i < 16u; i = i + 1u) {
            lv[16u * j + i] = clamp(nearest_int(x[16u * j + i] / dl), -4, 3) + 4;
        }
    }
    // Bit 2 of each level into hmask (element e: byte e % 32, bit e / 32), the rest in planes.
    for (var k = 0u; k < 32u; k = k + 1u) {
        blk[k] = 0u;
    }
    for (var e = 0u; e < 256u; e = e + 1u) {
        if (lv[e] > 3) {
            blk[e % 32u] = blk[e % 32u] | (1u << (e / 32u));
            lv[e] = lv[e] - 4;
        }
    }
    pack_2bit(32u, 0u);
}
#endif

#ifdef QZ_K45
// quantize_row_q4_K_ref / q5_K_ref: a min/scale fit per 32 elements weighted by rms + |x|,
// 6-bit scales and mins relative to the largest of each, every element requantized against
// the stored values. Block: d, dmin, scales[12], (q5_K: qh[32]), qs[128] at qs.
fn quantize_k45(nmax: i32, rmin: f32, nstep: i32, qs: u32) {
    var scales: array<f32, 8>;
    var mins: array<f32, 8>;
    var top = vec2<f32>(0.0);
    for (var j = 0u; j < 8u; j = j + 1u) {
        // Sequential sum of squares, each square rounded (an in-order reduction in GCC's build).
        var s2 = 0.0;
        for (var i = 0u; i < 32u; i = i + 1u) {
            let v = x[32u * j + i];
            s2 = s2 + v * v;
        }
        let av_x = sqrt(s2 / 32.0);
        for (var i = 0u; i < 32u; i = i + 1u) {
            wts[i] = av_x + abs(x[32u * j + i]);
        }
        let r = make_qkx_quants(nmax, 32u * j, 32u, rmin, 0.1, nstep, false);
        scales[j] = r.x;
        mins[j] = r.y;
        top = keep_max(top, r);
    }
    let max_scale = top.x;
    let max_min = top.y;
    let inv_scale = select(0.0, 63.0 / max_scale, max_scale > 0.0);
    let inv_min = select(0.0, 63.0 / max_min, max_min > 0.0);
    var ls: array<u32, 8>;
    var lm: array<u32, 8>;
    for (var j = 0u; j < 8u; j = j + 1u) {
        ls[j] = min(bitcast<u32>(nearest_int_prod(inv_scale, scales[j])) & 0xffu, 63u);
        lm[j] = min(bitcast<u32>(nearest_int_prod(inv_min, mins[j])) & 0xffu, 63u);
    }
    // get_scale_min_k4's packing: sub-blocks 0..4 in the low 6 bits of bytes j and j + 4,
    // 4..8 as nibbles of byte j + 4 with their top 2 bits above bytes j - 4 and j.
    for (var j = 0u; j < 8u; j = j + 1u) {
        if (j < 4u) {
            blk[4u + j] = ls[j];
            blk[8u + j] = lm[j];
        } else {
            blk[8u + j] = (ls[j] & 0xfu) | ((lm[j] & 0xfu) << 4u);
            blk[4u + j - 4u] = blk[4u + j - 4u] | ((ls[j] >> 4u) << 6u);
            blk[4u + j] = blk[4u + j] | ((lm[j] >> 4u) << 6u);
        }
    }
    let dh = f32_to_half(max_scale / 63.0);
    let mh = f32_to_half(max_min / 63.0);
    put_u16(0u, dh);
    put_u16(2u, mh);
    let dall = half_to_f32(dh, 0u);
    let mall = half_to_f32(mh, 0u);
    for (var j = 0u; j < 8u; j = j + 1u) {
        let d = dall * f32(ls[j]);
        if (d == 0.0) {
            continue;
        }
        let dm = mall * f32(lm[j]);
        for (var i = 0u; i < 32u; i = i + 1u) {
            lv[32u * j + i] = clamp(nearest_int((x[32u * j + i] + dm) / d), 0, nmax);
        }
    }
    // Low nibbles: elements 64 c + j and 64 c + 32 + j share byte 32 c + j.
    for (var c = 0u; c < 4u; c = c + 1u) {
        for (var j = 0u; j < 32u; j = j + 1u) {
            let lo = bitcast<u32>(lv[64u * c + j]) & 0xfu;
            let hi = bitcast<u32>(lv[64u * c + 32u + j]) & 0xfu;
            blk[qs + 32u * c + j] = lo | (hi << 4u);
        }
    }
    if (nmax == 31) {
        // q5_K: bit 4 of element e in qh[e % 32], bit e / 32.
        for (var k = 0u; k < 32u; k = k + 1u) {
            blk[16u + k] = 0u;
        }
        for (var e = 0u; e < 256u; e = e + 1u) {
            if (lv[e] > 15) {
                blk[16u + e % 32u] = blk[16u + e % 32u] | (1u << (e / 32u));
            }
        }
    }
}
#endif

#ifdef QZ_Q6_K
// quantize_row_q6_K_ref: a symmetric 6-bit fit per 16 elements, int8 scales relative to the
// largest-magnitude scale. Block: ql[128], qh[64], scales[16], d.
fn quantize_q6_k() {
    var scales: array<f32, 16>;
    let m = fit_16(&scales, false);
    let max_scale = m.x;
    if (m.y < GROUP_MAX_EPS) {
        for (var k = 0u; k < QBYTES; k = k + 1u) {
            blk[k] = 0u;
        }
        return;
    }
    let iscale = -128.0 / max_scale;
    let dh = f32_to_half(1.0 / iscale);
    put_u16(208u, dh);
    let dall = half_to_f32(dh, 0u);
    for (var j = 0u; j < 16u; j = j + 1u) {
        let s = min(nearest_int_prod(iscale, scales[j]), 127);
        blk[192u + j] = bitcast<u32>(s) & 0xffu;
        // The stored int8 scale.
        let d = dall * f32((s << 24u) >> 24u);
        if (d == 0.0) {
            continue;
        }
        for (var i = 0u; i < 16u; i = i + 1u) {
            lv[16u * j + i] = clamp(nearest_int(x[16u * j + i] / d), -32, 31) + 32;
        }
    }
    // Low nibbles: element 128 c + j (and + 64 in the high half) in ql[64 c + j], + 32 (and
    // + 96) in ql[64 c + 32 + j]; the top two bits in 2-bit planes.
    for (var c = 0u; c < 2u; c = c + 1u) {
        for (var j = 0u; j < 32u; j = j + 1u) {
            let e = 128u * c + j;
            let l = vec4<u32>(bitcast<u32>(lv[e]), bitcast<u32>(lv[e + 32u]), bitcast<u32>(lv[e + 64u]), bitcast<u32>(lv[e + 96u])) & vec4<u32>(0xfu);
            blk[64u * c + j] = l.x | (l.z << 4u);
            blk[64u * c + 32u + j] = l.y | (l.w << 4u);
        }
    }
    pack_2bit(128u, 4u);
}
#endif

// ---- ternary: every element -1, 0 or +1 times |x|max ----

// lroundf(v) + 1 kept to its low byte, as the CPU's trit: rounding half away from zero (the
// fraction a - floor(a) is exact), NaN and out-of-range as cvttss2si gives them.
fn trit(v: f32) -> u32 {
    let a = abs(v);
    var r = floor(a);
    if (a - r >= 0.5) {
        r = r + 1.0;
    }
    return bitcast<u32>(trunc_i32(select(r, -r, v < 0.0)) + 1) & 0xffu;
}

// The block's absmax (C's MAX fold from the first element) and its inverse (0 for zero).
fn ternary_scale() -> vec2<f32> {
    var amax = abs(x[0]);
    for (var t = 1u; t < 256u; t = t + 1u) {
        let a = abs(x[t]);
        if (!(amax > a)) {
            amax = a;
        }
    }
    return vec2<f32>(amax, select(0.0, 1.0 / amax, amax != 0.0));
}

#ifdef QZ_TQ1_0
// quantize_row_tq1_0_ref: five trits per byte as a base-3 number (most significant first),
// scaled by 256 / 243 rounding up. Bytes 0..32 hold elements m + 32 n, bytes 32..48 elements
// 160 + m + 16 n, qh (48..52) elements 240 + j + 4 n and one spare trit. Block: qs[48], qh[4], d.
fn quantize_tq1_0() {
    let s = ternary_scale();
    for (var k = 0u; k < 52u; k = k + 1u) {
        blk[k] = 0u;
    }
    for (var e = 0u; e < 256u; e = e + 1u) {
        var byte = e % 32u;
        if (e >= 240u) {
            byte = 48u + (e - 240u) % 4u;
        } else if (e >= 160u) {
            byte = 32u + (e - 160u) % 16u;
        }
        blk[byte] = (blk[byte] * 3u + trit(x[e] * s.y)) & 0xffu;
    }
    for (var k = 0u; k < 52u; k = k + 1u) {
        var q = blk[k];
        if (k >= 48u) {
            q = (q * 3u) & 0xffu;
        }
        blk[k] = ((q * 256u + 242u) / 243u) & 0xffu;
    }
    put_u16(52u, f32_to_half(s.x));
}
#endif

#ifdef QZ_TQ2_0
// quantize_row_tq2_0_ref: trits in the 2-bit planes of q2_K. Block: qs[64], d.
fn quantize_tq2_0() {
    let s = ternary_scale();
    for (var e = 0u; e < 256u; e = e + 1u) {
        lv[e] = bitcast<i32>(trit(x[e] * s.y));
    }
    pack_2bit(0u, 0u);
    put_u16(64u, f32_to_half(s.x));
}
#endif

#ifdef QZ_IQ4_XS
// quantize_row_iq4_xs_ref (quantize_row_iq4_nl_impl with ntry 7): per 32 elements a scale
// fitted to the iq4_nl levels and refined over 15 more candidates, then 6-bit signed
// sub-block scales as multiples of -max / 32 and the levels re-picked against them.
// Block: d, scales_h (2 bits per sub-block), scales_l[4] (nibbles), qs[128].
fn quantize_iq4_xs() {
    var scales: array<f32, 8>;
    var amax_scale = 0.0;
    var max_scale = 0.0;
    for (var ib = 0u; ib < 8u; ib = ib + 1u) {
        for (var t = 0u; t < 32u; t = t + 1u) {
            wts[t] = x[32u * ib + t] * x[32u * ib + t];
        }
        let m = absmax_of(32u * ib, 32u);
        if (m.y < GROUP_MAX_EPS) {
            scales[ib] = 0.0;
            continue;
        }
        let s = fit_iq4(32u * ib, 1.0 / (-m.x / KVALUES_IQ4NL[0]), true);
        var d = s.x / s.y;
        var best = d * s.x;
        for (var itry = -7; itry <= 7; itry = itry + 1) {
            let t = fit_iq4(32u * ib, f32(itry - 127) / m.x, false);
            if (t.y > 0.0 && t.x * t.x > best * t.y) {
                d = t.x / t.y;
                best = d * t.x;
            }
        }
        scales[ib] = d;
        if (abs(d) > amax_scale) {
            amax_scale = abs(d);
            max_scale = d;
        }
    }
    let d = -max_scale / 32.0;
    put_u16(0u, f32_to_half(d));
    let id = select(0.0, 1.0 / d, d != 0.0);
    var h = 0u;
    for (var ib = 0u; ib < 8u; ib = ib + 1u) {
        let ls = clamp(nearest_int_prod(id, scales[ib]), -32, 31);
        let dl = d * f32(ls);
        let idl = select(0.0, 1.0 / dl, dl != 0.0);
        for (var t = 0u; t < 32u; t = t + 1u) {
            lv[32u * ib + t] = i32(best_index(idl * x[32u * ib + t]));
        }
        let lu = u32(ls + 32);
        if (ib % 2u == 0u) {
            blk[4u + ib / 2u] = lu & 0xfu;
        } else {
            blk[4u + ib / 2u] = blk[4u + ib / 2u] | ((lu & 0xfu) << 4u);
        }
        h = h | ((lu >> 4u) << (2u * ib));
    }
    put_u16(2u, h);
    pack_iq4(8u, 256u);
}
#endif
