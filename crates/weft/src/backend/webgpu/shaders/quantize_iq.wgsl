// CPY into the grid I-quants (iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s, iq1_m) as the
// engine's CPU quantizers compute them (crates/weft/src/types/quant/iq1.rs, iq2.rs, iq3.rs,
// iq_search.rs; ggml's quantize_row_<type>_impl): iq2_xxs, iq2_xs and iq1_s with the unit
// importance weights test-backend-ops quantizes them with, the others without weights.
// One workgroup per block, one invocation (lane) per sub-block: the searches are long, and
// lavapipe's loop budget counts per invocation (ops/loops.rs). Each lane searches its
// sub-block and leaves its grid indices, signs and scale in workgroup memory; lane 0 then
// picks the block scale and writes the bytes. The grids are searched through the CPU's own
// tables (packed grid levels, the map from level vectors to grid points, the neighbour lists
// of the vectors off the grid), one storage buffer per device (ops/quant.rs's
// iq_search_words). Multiply-adds GCC's build fuses go through fma_exact, as in
// quantize_k.wgsl.
// Where the CPU reports an error (non-finite input: ggml aborts) this writes some block, and
// where a CPU buffer carries state from one sub-block to the next for weights that are all
// zero (never with these weights and finite input) the lane starts from zeros instead. The
// one such state that finite input reaches, the shift of an iq1 sub-block below the
// threshold (the last shift the row used in that position), is looked up: see prev_shift.
// Included by quantize.wgsl (QZ_GRID) after its helpers and quantize_k.wgsl's.

@group(0) @binding(14) var<storage, read> iq_search: array<u32>;

// How a type weights its values (the CPU's weights without an importance matrix, or with
// the unit one its CPY uses): x^2; qw sqrt(sigma2 + x^2) with qw = 1; x^2 + sigma2 / 4.
const W_SQUARE: u32 = 0u;
const W_SQRT: u32 = 1u;
const W_QUARTER: u32 = 2u;

// Per type: the table (order of ops/quant.rs's iq_search_words), group width and bits per
// level of the map index, levels 0..KMAX, the scale search's 2 NSTEPS + 1 candidates STEP
// apart, whether its final snap revisits every group, whether the 8th sign of each 8 is
// implied by even parity, the threshold below which a sub-block is zero, the weights, and
// sigma2 as a multiple of the block's mean square. The sub-block size follows from the lane
// count the planner picks (ops/cpy.rs's grid_lanes).
#ifdef QZ_IQ2_XXS
const TBL: u32 = 0u;
const GN: u32 = 8u;
const BITS: u32 = 2u;
const KMAX: i32 = 3;
const NSTEPS: i32 = 6;
const STEP: f32 = 0.1;
const RESNAP_ALL: bool = true;
const EVEN: bool = true;
const EPS: f32 = 1e-15;
const WEIGHTS: u32 = W_SQRT;
const SIGMA2_SCALE: f32 = 1.0;
#endif
#ifdef QZ_IQ2_XS
const TBL: u32 = 1u;
const GN: u32 = 8u;
const BITS: u32 = 2u;
const KMAX: i32 = 3;
const NSTEPS: i32 = 9;
const STEP: f32 = 0.1;
const RESNAP_ALL: bool = false;
const EVEN: bool = true;
const EPS: f32 = 1e-15;
const WEIGHTS: u32 = W_SQRT;
const SIGMA2_SCALE: f32 = 1.0;
#endif
#ifdef QZ_IQ2_S
const TBL: u32 = 2u;
const GN: u32 = 8u;
const BITS: u32 = 2u;
const KMAX: i32 = 3;
const NSTEPS: i32 = 9;
const STEP: f32 = 0.1;
const RESNAP_ALL: bool = false;
const EVEN: bool = false;
const EPS: f32 = 1e-8;
const WEIGHTS: u32 = W_QUARTER;
const SIGMA2_SCALE: f32 = 2.0;
#endif
#ifdef QZ_IQ3_XXS
const TBL: u32 = 4u;
const GN: u32 = 4u;
const BITS: u32 = 3u;
const KMAX: i32 = 8;
const NSTEPS: i32 = 15;
const STEP: f32 = 0.2;
const RESNAP_ALL: bool = false;
const EVEN: bool = true;
const EPS: f32 = 1e-8;
const WEIGHTS: u32 = W_SQUARE;
const SIGMA2_SCALE: f32 = 2.0;
#endif
#ifdef QZ_IQ3_S
const TBL: u32 = 5u;
const GN: u32 = 4u;
const BITS: u32 = 3u;
const KMAX: i32 = 8;
const NSTEPS: i32 = 9;
const STEP: f32 = 0.2;
const RESNAP_ALL: bool = true;
const EVEN: bool = false;
// iq3_s skips only a sub-block whose largest magnitude is 0.
const EPS: f32 = 0.0;
const WEIGHTS: u32 = W_SQUARE;
const SIGMA2_SCALE: f32 = 2.0;
#endif
#ifdef QZ_IQ1_S
const TBL: u32 = 3u;
const GN: u32 = 8u;
const BITS: u32 = 2u;
const EPS: f32 = 1e-12;
const WEIGHTS: u32 = W_SQRT;
const SIGMA2_SCALE: f32 = 2.0;
#endif
#ifdef QZ_IQ1_M
const TBL: u32 = 3u;
const GN: u32 = 8u;
const BITS: u32 = 2u;
const EPS: f32 = 1e-7;
const WEIGHTS: u32 = W_SQUARE;
const SIGMA2_SCALE: f32 = 2.0;
#endif

const LANES: u32 = {{WG_SIZE}}u;
const BS: u32 = QK / LANES;
const NG: u32 = BS / GN;

// The lane's sub-block: values, weights, their square roots, magnitudes, levels (the best so
// far and a candidate's), which groups the levels were on the grid for, sign bytes.
var<private> xs: array<f32, 32>;
var<private> w: array<f32, 32>;
var<private> wa: array<f32, 32>;
var<private> xv: array<f32, 32>;
var<private> lq: array<i32, 32>;
var<private> la: array<i32, 32>;
var<private> ong: array<bool, 8>;
var<private> onga: array<bool, 8>;
var<private> sgn: array<u32, 4>;

// What each lane leaves for lane 0: packed indices and signs (per type, see lane_result),
// the sub-block scale (0 for a zero sub-block), and whether it stored anything (iq3_s) or
// its shift (iq1).
var<workgroup> res: array<vec4<u32>, LANES>;
var<workgroup> res_scale: array<f32, LANES>;
var<workgroup> res_flag: array<i32, LANES>;

fn tbl(part: u32) -> u32 {
    return iq_search[3u * TBL + part];
}

// The packed levels of grid point j.
fn point_levels(j: u32) -> u32 {
    return iq_search[tbl(0u) + j];
}

// The map entry of packed level vector u: a grid index, or -(offset + 1) of a neighbour list.
fn map_at(u: u32) -> i32 {
    return bitcast<i32>(iq_search[tbl(1u) + u]);
}

fn nb_word(k: u32) -> u32 {
    return iq_search[tbl(2u) + k];
}

fn level_of(packed: u32, i: u32) -> i32 {
    return i32((packed >> (BITS * i)) & ((1u << BITS) - 1u));
}

// nearest_int(0.5 * (id * x - 1)), both products fused.
fn level_code(id: f32, v: f32) -> i32 {
    return nearest_int_prod(fma_exact(id, v, -1.0), 0.5);
}

fn pack_group(l: ptr<private, array<i32, 32>>, k: u32) -> u32 {
    var u = 0u;
    for (var i = 0u; i < GN; i = i + 1u) {
        u = u | (u32((*l)[GN * k + i]) << (BITS * i));
    }
    return u;
}

// The grid index of group k's levels (0 off the grid, where the CPU reports an error).
fn index_of(l: ptr<private, array<i32, 32>>, k: u32) -> u32 {
    return u32(max(map_at(pack_group(l, k)), 0));
}

// (m == 0 is iq3_s's test, EPS being 0 there; for the others it implies m < EPS.)
fn too_small(m: f32) -> bool {
    return m < EPS || m == 0.0;
}

// The weight of value v (WEIGHTS) in a block with this sigma2.
fn weight_of(v: f32, sigma2: f32) -> f32 {
    switch (WEIGHTS) {
        case W_SQRT: {
            return sqrt(fma_exact(v, v, sigma2));
        }
        case W_QUARTER: {
            return fma_exact(v, v, 0.25 * sigma2);
        }
        default: {
            return v * v;
        }
    }
}

// The lane's block-wide sigma2 input: the block's sum of squares, in order (products rounded).
fn sum_squares() -> f32 {
    var s = 0.0;
    for (var t = 0u; t < QK; t = t + 1u) {
        s = s + x[t] * x[t];
    }
    return s;
}

// ---- the neighbour scan both families share ----

const NO_POINT: u32 = 0xffffffffu;

// Grid level l's value: 2l + 1, or for iq1 the level shifted by the group's delta (neg).
fn level_value(l: i32, neg: bool) -> f32 {
#ifdef QZ_IQ1
    return xg(l, neg);
#else
    return f32(2 * l + 1);
#endif
}

// One element's term of a grid point's weighted squared distance at `scale`, added to d2:
// the magnitudes xv against the weights' roots wa (iq1: the values against the weights,
// copied there by lane_search).
fn nb_term(d2: f32, pl: u32, k: u32, i: u32, scale: f32, neg: bool) -> f32 {
    let e = GN * k + i;
    let diff = fma_exact(scale, level_value(level_of(pl, i), neg), -xv[e]);
    return fma_exact(wa[e] * diff, diff, d2);
}

// The distance of group k from grid point levels pl. Written out rather than looped (as in
// group_levels): lavapipe's loop budget counts every iteration of every loop of an
// invocation, and the neighbour scans are the searches' longest loops.
fn nb_dist(pl: u32, k: u32, scale: f32, neg: bool) -> f32 {
    var d2 = nb_term(0.0, pl, k, 0u, scale, neg);
    d2 = nb_term(d2, pl, k, 1u, scale, neg);
    d2 = nb_term(d2, pl, k, 2u, scale, neg);
    d2 = nb_term(d2, pl, k, 3u, scale, neg);
    if (GN == 8u) {
        d2 = nb_term(d2, pl, k, 4u, scale, neg);
        d2 = nb_term(d2, pl, k, 5u, scale, neg);
        d2 = nb_term(d2, pl, k, 6u, scale, neg);
        d2 = nb_term(d2, pl, k, 7u, scale, neg);
    }
    return d2;
}

// For an off-grid map entry m, the point of its neighbour list nearest to group k at `scale`
// (the first of equals), or NO_POINT when none scores below f32's max.
fn nearest_neighbour(m: i32, k: u32, scale: f32, neg: bool) -> u32 {
    let start = u32(-(m + 1));
    let n = nb_word(start);
    var best_d2 = 3.40282347e38;
    var best = NO_POINT;
    for (var c = 0u; c < n; c = c + 1u) {
        let j = nb_word(start + 1u + c);
        let d2 = nb_dist(point_levels(j), k, scale, neg);
        if (d2 < best_d2) {
            best_d2 = d2;
            best = j;
        }
    }
    return best;
}

// Group k's levels in l from grid point j.
fn set_group(l: ptr<private, array<i32, 32>>, k: u32, j: u32) {
    let pl = point_levels(j);
    for (var i = 0u; i < GN; i = i + 1u) {
        (*l)[GN * k + i] = level_of(pl, i);
    }
}

#ifndef QZ_IQ1
// split_signs for the 8 values of sign group g: magnitudes into xv, the sign byte into sgn;
// with EVEN, an odd count of negatives flips the element of least w x^2 (its magnitude
// negated) and the byte keeps the 7 stored bits.
fn split_signs(g: u32) {
    var s = 0u;
    var nflip = 0u;
    for (var i = 0u; i < 8u; i = i + 1u) {
        let v = xs[8u * g + i];
        if (v >= 0.0) {
            xv[8u * g + i] = v;
        } else {
            xv[8u * g + i] = -v;
            nflip = nflip + 1u;
            s = s | (1u << i);
        }
    }
    if (EVEN) {
        if ((nflip & 1u) == 1u) {
            var imin = 0u;
            var mn = w[8u * g] * xs[8u * g] * xs[8u * g];
            for (var i = 1u; i < 8u; i = i + 1u) {
                let e = 8u * g + i;
                let ax = w[e] * xs[e] * xs[e];
                if (ax < mn) {
                    mn = ax;
                    imin = i;
                }
            }
            xv[8u * g + imin] = -xv[8u * g + imin];
            s = s ^ (1u << imin);
        }
        s = s & 127u;
    }
    sgn[g] = s;
}

// Level i of group k at inverse scale id into l, returned in its map-index position.
fn set_level(l: ptr<private, array<i32, 32>>, k: u32, i: u32, id: f32) -> u32 {
    let e = GN * k + i;
    let v = clamp(level_code(id, xv[e]), 0, KMAX - 1);
    (*l)[e] = v;
    return u32(v) << (BITS * i);
}

// Group k's levels at inverse scale id into l, packed as a map index. Written out rather
// than looped (here and in nb_dist): lavapipe's loop budget counts every iteration of every
// loop of an invocation, and the neighbour scans are the searches' longest loops.
fn group_levels(l: ptr<private, array<i32, 32>>, k: u32, id: f32) -> u32 {
    var u = set_level(l, k, 0u, id) | set_level(l, k, 1u, id) | set_level(l, k, 2u, id) | set_level(l, k, 3u, id);
    if (GN == 8u) {
        u = u | set_level(l, k, 4u, id) | set_level(l, k, 5u, id) | set_level(l, k, 6u, id) | set_level(l, k, 7u, id);
    }
    return u;
}

// GridSearch::snap: group k's levels at inverse scale id into l; off the grid, the
// neighbour nearest at `scale` (weights wa). Returns whether the levels were on the grid.
fn snap(l: ptr<private, array<i32, 32>>, k: u32, id: f32, scale: f32) -> bool {
    let m = map_at(group_levels(l, k, id));
    if (m >= 0) {
        return true;
    }
    let best = nearest_neighbour(m, k, scale, false);
    if (best != NO_POINT) {
        set_group(l, k, best);
    }
    return false;
}

// (sum w x q, sum w q^2) of levels l (q = 2l + 1), fused.
fn fit(l: ptr<private, array<i32, 32>>) -> vec2<f32> {
    var sumqx = 0.0;
    var sumq2 = 0.0;
    for (var i = 0u; i < BS; i = i + 1u) {
        let q = f32(2 * (*l)[i] + 1);
        sumqx = fma_exact(w[i] * xv[i], q, sumqx);
        sumq2 = fma_exact(w[i] * q, q, sumq2);
    }
    return vec2<f32>(sumqx, sumq2);
}

// Keeps the candidate levels when they fit better; returns the new (scale, best).
fn keep_if_better(f: vec2<f32>, scale: f32, best: f32) -> vec2<f32> {
    if (f.y > 0.0 && f.x * f.x > best * f.y) {
        let s = f.x / f.y;
        lq = la;
        ong = onga;
        return vec2<f32>(s, s * f.x);
    }
    return vec2<f32>(scale, best);
}

// The final snap at the chosen scale and the refit (GridSearch::run's tail; iq2_xxs revisits
// every group whenever the scale is positive).
fn resnap(scale: f32) -> f32 {
    var any_off = false;
    for (var k = 0u; k < NG; k = k + 1u) {
        any_off = any_off || !ong[k];
    }
#ifdef QZ_IQ2_XXS
    any_off = true;
#endif
    if (!any_off || !(scale > 0.0)) {
        return scale;
    }
    let id = 1.0 / scale;
    for (var k = 0u; k < NG; k = k + 1u) {
        if (!ong[k] || RESNAP_ALL) {
            snap(&lq, k, id, scale);
        }
    }
    let f = fit(&lq);
    return select(scale, f.x / f.y, f.y > 0.0);
}

#ifdef QZ_IQ2_XXS
// make_qp_quants(4, xv, lq, w) with GCC's vectorized mse loop (products rounded, not fused):
// the best unconstrained levels 0..4 and their scale, where iq2_xxs's search starts. Its
// output is bytes: a negative level (the element even parity flipped) is kept as 256 + l
// while it runs, and read back as a signed byte at the end, as the CPU does.
fn make_qp_quants() -> f32 {
    let nmax = 4;
    var mx = 0.0;
    for (var i = 0u; i < BS; i = i + 1u) {
        mx = c_max(mx, xv[i]);
    }
    if (mx == 0.0) {
        for (var i = 0u; i < BS; i = i + 1u) {
            lq[i] = 0;
        }
        return 0.0;
    }
    var iscale = f32(nmax) / mx;
    for (var i = 0u; i < BS; i = i + 1u) {
        lq[i] = nearest_int_prod(iscale, xv[i]) & 255;
    }
    let scale = 1.0 / iscale;
    var best_mse = 0.0;
    for (var i = 0u; i < BS; i = i + 1u) {
        let diff = fma_exact(-scale, f32(lq[i]), xv[i]);
        best_mse = fma_exact(w[i] * diff, diff, best_mse);
    }
    for (var is = -4; is <= 4; is = is + 1) {
        if (is == 0) {
            continue;
        }
        let iscale_is = fma_exact(f32(is), 0.1, f32(nmax)) / mx;
        let scale_is = 1.0 / iscale_is;
        var mse = 0.0;
        for (var i = 0u; i < BS; i = i + 1u) {
            let l = min(nearest_int_prod(iscale_is, xv[i]), nmax);
            let diff = fma_exact(-scale_is, f32(l), xv[i]);
            mse = mse + opaque(w[i] * diff) * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    var sumlx = 0.0;
    var suml2 = 0.0;
    for (var i = 0u; i < BS; i = i + 1u) {
        let l = min(nearest_int_prod(iscale, xv[i]), nmax);
        lq[i] = l & 255;
        let lf = f32(l);
        sumlx = fma_exact(w[i] * xv[i], lf, sumlx);
        suml2 = fma_exact(lf, w[i] * lf, suml2);
    }
    for (var itry = 0; itry < 5; itry = itry + 1) {
        var changed = false;
        for (var i = 0u; i < BS; i = i + 1u) {
            let li = f32(lq[i]);
            let wx = w[i] * xv[i];
            var slx = fma_exact(-wx, li, sumlx);
            if (slx <= 0.0) {
                continue;
            }
            var sl2 = fma_exact(-li, w[i] * li, suml2);
            if (sl2 > 0.0) {
                let new_l = min(nearest_int(opaque(xv[i] * sl2) / slx), nmax);
                if ((new_l & 255) != lq[i]) {
                    let nl = f32(new_l);
                    slx = fma_exact(wx, nl, slx);
                    sl2 = fma_exact(nl, w[i] * nl, sl2);
                    if (opaque(slx * slx) * suml2 > opaque(sumlx * sumlx) * sl2) {
                        lq[i] = new_l & 255;
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
    for (var i = 0u; i < BS; i = i + 1u) {
        lq[i] = (lq[i] << 24u) >> 24u;
    }
    return sumlx / suml2;
}

// quantize_row_iq2_xxs_impl's search: from make_qp_quants' scale, 13 candidates around it.
fn search(mx: f32) -> f32 {
    var scale = make_qp_quants();
    let eff_max = scale * f32(KMAX);
    var best = 0.0;
    for (var is = -NSTEPS; is <= NSTEPS; is = is + 1) {
        let id = fma_exact(f32(is), STEP, f32(2 * KMAX - 1)) / eff_max;
        let this_scale = 1.0 / id;
        for (var k = 0u; k < NG; k = k + 1u) {
            onga[k] = snap(&la, k, id, this_scale);
        }
        let sb = keep_if_better(fit(&la), scale, best);
        scale = sb.x;
        best = sb.y;
    }
    return resnap(scale);
}
#else
// GridSearch::run: 2 NSTEPS + 1 inverse scales (2 KMAX - 1 + is STEP) / max, every group
// snapped to the grid, the best weighted fit kept, then the final snap and refit.
fn search(mx: f32) -> f32 {
    var best = 0.0;
    var scale = mx / f32(2 * KMAX - 1);
    for (var is = -NSTEPS; is <= NSTEPS; is = is + 1) {
        let id = fma_exact(f32(is), STEP, f32(2 * KMAX - 1)) / mx;
        let this_scale = 1.0 / id;
        for (var k = 0u; k < NG; k = k + 1u) {
            onga[k] = snap(&la, k, id, this_scale);
        }
        let sb = keep_if_better(fit(&la), scale, best);
        scale = sb.x;
        best = sb.y;
    }
    return resnap(scale);
}
#endif

// The lane's sub-block: weights, signs, the search; its indices, signs and scale to res.
fn lane_search(ib: u32, sigma2: f32) {
    for (var i = 0u; i < BS; i = i + 1u) {
        w[i] = weight_of(xs[i], sigma2);
        wa[i] = sqrt(w[i]);
    }
    for (var g = 0u; g < BS / 8u; g = g + 1u) {
        split_signs(g);
    }
    var mx = xv[0];
    for (var i = 1u; i < BS; i = i + 1u) {
        mx = c_max(mx, xv[i]);
    }
    res[ib] = vec4<u32>(0u);
    res_scale[ib] = 0.0;
    res_flag[ib] = 0;
    if (too_small(mx)) {
        return;
    }
    for (var k = 0u; k < NG; k = k + 1u) {
        ong[k] = true;
#ifdef QZ_IQ3_S
        ong[k] = false;
#endif
    }
    for (var i = 0u; i < BS; i = i + 1u) {
        lq[i] = 0;
    }
    var scale = search(mx);
    let smask = select(255u, 127u, EVEN);
    if (scale < 0.0) {
        scale = -scale;
        for (var g = 0u; g < BS / 8u; g = g + 1u) {
            sgn[g] = ~sgn[g] & smask;
        }
    }
    var r = vec4<u32>(0u);
#ifdef QZ_IQ2_XXS
    for (var k = 0u; k < 4u; k = k + 1u) {
        r.x = r.x | (index_of(&lq, k) << (8u * k));
        r.y = r.y | (sgn[k] << (7u * k));
    }
#endif
#ifdef QZ_IQ2_XS
    r.x = (index_of(&lq, 0u) | (sgn[0] << 9u)) | ((index_of(&lq, 1u) | (sgn[1] << 9u)) << 16u);
#endif
#ifdef QZ_IQ2_S
    r.x = index_of(&lq, 0u) | (index_of(&lq, 1u) << 16u);
    r.y = sgn[0] | (sgn[1] << 8u);
#endif
#ifdef QZ_IQ3_XXS
    for (var k = 0u; k < 4u; k = k + 1u) {
        r.x = r.x | ((index_of(&lq, k) & 0xffu) << (8u * k));
        r.y = r.y | ((index_of(&lq, k + 4u) & 0xffu) << (8u * k));
        r.z = r.z | (sgn[k] << (7u * k));
    }
#endif
#ifdef QZ_IQ3_S
    for (var k = 0u; k < 4u; k = k + 1u) {
        let i0 = index_of(&lq, k);
        let i1 = index_of(&lq, k + 4u);
        r.x = r.x | ((i0 & 0xffu) << (8u * k));
        r.y = r.y | ((i1 & 0xffu) << (8u * k));
        r.z = r.z | ((i0 >> 8u) << k) | ((i1 >> 8u) << (k + 4u));
        r.w = r.w | (sgn[k] << (8u * k));
    }
#endif
    res[ib] = r;
    res_scale[ib] = scale;
    res_flag[ib] = 1;
}

// The 4-bit code of a sub-block scale at inverse block scale id.
fn scale_code(id: f32, s: f32) -> u32 {
    return u32(clamp(level_code(id, s), 0, 15));
}

// Lane 0: the block scale from the sub-block scales, the codes, the bytes.
fn finish_block() {
    for (var k = 0u; k < QBYTES; k = k + 1u) {
        blk[k] = 0u;
    }
    var max_scale = 0.0;
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        max_scale = c_max(max_scale, res_scale[ib]);
    }
#ifdef QZ_IQ2_S
    // Indices and signs are stored whatever the block scale turns out to be.
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        if (res_flag[ib] == 0) {
            continue;
        }
        for (var k = 0u; k < 2u; k = k + 1u) {
            let i8 = 2u * ib + k;
            let index = (res[ib].x >> (16u * k)) & 0xffffu;
            blk[2u + i8] = index & 0xffu;
            blk[66u + i8 / 4u] = blk[66u + i8 / 4u] | ((index >> 8u) << (2u * (i8 % 4u)));
            blk[34u + i8] = (res[ib].y >> (8u * k)) & 0xffu;
        }
    }
#endif
#ifdef QZ_IQ3_S
    // Indices and signs go to cursors that only advance past stored sub-blocks (ggml's
    // pointers): a zero sub-block shifts the ones after it.
    var at = 0u;
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        if (res_flag[ib] == 0) {
            continue;
        }
        put_u32(2u + 8u * at, res[ib].x);
        put_u32(6u + 8u * at, res[ib].y);
        blk[66u + ib] = res[ib].z;
        put_u32(74u + 4u * at, res[ib].w);
        at = at + 1u;
    }
#endif
    if (max_scale == 0.0) {
        return;
    }
    let d = max_scale / 31.0;
    let id = 1.0 / d;
#ifdef QZ_IQ2_XXS
    put_u16(0u, f32_to_half(d));
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        put_u32(2u + 8u * ib, res[ib].x);
        put_u32(6u + 8u * ib, res[ib].y | (scale_code(id, res_scale[ib]) << 28u));
    }
#endif
#ifdef QZ_IQ2_XS
    put_u16(0u, f32_to_half(d));
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        put_u32(2u + 4u * ib, res[ib].x);
        blk[66u + ib / 2u] = blk[66u + ib / 2u] | (scale_code(id, res_scale[ib]) << (4u * (ib % 2u)));
    }
#endif
#ifdef QZ_IQ2_S
    put_u16(0u, f32_to_half(d * 0.9875));
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        blk[74u + ib / 2u] = blk[74u + ib / 2u] | (scale_code(id, res_scale[ib]) << (4u * (ib % 2u)));
    }
#endif
#ifdef QZ_IQ3_XXS
    // ggml: "small improvement via this fudge factor".
    put_u16(0u, f32_to_half(d * 1.0125));
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        put_u32(2u + 8u * ib, res[ib].x);
        put_u32(6u + 8u * ib, res[ib].y);
        put_u32(66u + 4u * ib, res[ib].z | (scale_code(id, res_scale[ib]) << 28u));
    }
#endif
#ifdef QZ_IQ3_S
    put_u16(0u, f32_to_half(d * 1.033));
    for (var ib = 0u; ib < LANES; ib = ib + 2u) {
        blk[106u + ib / 2u] = scale_code(id, res_scale[ib]) | (scale_code(id, res_scale[ib + 1u]) << 4u);
    }
#endif
}
#endif

#ifdef QZ_IQ1
// ---- iq1_s, iq1_m: levels -1, 0, +1 shifted by +-IQ1_DELTA, an exact search over splits ----

const IQ1_DELTA: f32 = 0.125;

// The shifted value of level l (0..2) for a positive or negative shift.
fn xg(l: i32, negative: bool) -> f32 {
    return f32(l - 1) + select(IQ1_DELTA, -IQ1_DELTA, negative);
}

// The lane's sorted order of its values (a stable insertion sort, as the CPU's).
var<private> order: array<u32, 32>;

fn sort_values() {
    for (var i = 0u; i < BS; i = i + 1u) {
        order[i] = i;
    }
    for (var i = 1u; i < BS; i = i + 1u) {
        var j = i;
        while (j > 0u && xs[order[j]] < xs[order[j - 1u]]) {
            let t = order[j];
            order[j] = order[j - 1u];
            order[j - 1u] = t;
            j = j - 1u;
        }
    }
}

fn iq1_weights(sigma2: f32) {
    for (var i = 0u; i < BS; i = i + 1u) {
        w[i] = weight_of(xs[i], sigma2);
    }
}

fn max_abs() -> f32 {
    var m = abs(xs[0]);
    for (var i = 1u; i < BS; i = i + 1u) {
        m = c_max(m, abs(xs[i]));
    }
    return m;
}

// Whether group k (of 8) of the sub-block shifts negatively under shift pattern `shift`
// (iq1_s: 1 or -1 for all; iq1_m: bit 1 for the first group, bit 0 for the second).
fn negative_shift(shift: i32, k: u32) -> bool {
#ifdef QZ_IQ1_S
    return shift == -1;
#else
    return select(shift % 2 == 1, shift >= 2, k == 0u);
#endif
}

#ifdef QZ_IQ1_S
// Every split (i1, i2) of the sorted values into levels 0/1/2 with either shift; returns
// (scale, i1, i2, shift) of the largest sumqx^2 / sumq2 (the CPU's order and roundings).
fn best_split() -> vec4<f32> {
    var sumx: array<f32, 33>;
    var sumw: array<f32, 33>;
    for (var j = 0u; j < BS; j = j + 1u) {
        let i = order[j];
        sumx[j + 1u] = fma_exact(w[i], xs[i], sumx[j]);
        sumw[j + 1u] = sumw[j] + w[i];
    }
    var best_score = -1.17549435e-38;
    var r = vec4<f32>(max_abs(), -1.0, 0.0, 0.0);
    for (var i1 = 0u; i1 <= BS; i1 = i1 + 1u) {
        for (var i2 = i1; i2 <= BS; i2 = i2 + 1u) {
            let a = sumx[i1] - sumx[0];
            let b = sumx[i2] - sumx[i1];
            let c = sumx[BS] - sumx[i2];
            let aw = sumw[i1] - sumw[0];
            let bw = sumw[i2] - sumw[i1];
            let cw = sumw[BS] - sumw[i2];
            for (var s = 0; s < 2; s = s + 1) {
                let neg = s == 1;
                let x0 = xg(0, neg);
                let x1 = xg(1, neg);
                let x2 = xg(2, neg);
                let sumqx = fma_exact(c, x2, opaque(a * x0) + opaque(b * x1));
                let sumq2 = fma_exact(cw * x2, x2, opaque(opaque(aw * x0) * x0) + opaque(opaque(bw * x1) * x1));
                if (sumq2 > 0.0 && sumqx * sumqx > best_score * sumq2) {
                    r.x = sumqx / sumq2;
                    best_score = r.x * sumqx;
                    r.y = f32(i1);
                    r.z = f32(i2);
                    r.w = select(1.0, -1.0, neg);
                }
            }
        }
    }
    return r;
}
#else
// iq1_m: every split with each of the 4 shift patterns, sums over the sorted values.
fn best_split() -> vec4<f32> {
    var best_score = -1.17549435e-38;
    var r = vec4<f32>(max_abs(), -1.0, 0.0, 0.0);
    for (var i1 = 0u; i1 <= BS; i1 = i1 + 1u) {
        for (var i2 = i1; i2 <= BS; i2 = i2 + 1u) {
            var sumqx = vec4<f32>(0.0);
            var sumq2 = vec4<f32>(0.0);
            for (var j = 0u; j < BS; j = j + 1u) {
                let i = order[j];
                let level = select(select(2, 1, j < i2), 0, j < i1);
                for (var k = 0; k < 4; k = k + 1) {
                    let xx = xg(level, negative_shift(k, i / 8u));
                    let wx = w[i] * xx;
                    sumqx[k] = sumqx[k] + opaque(wx * xs[i]);
                    // Only the middle level's product fuses (GCC shares the others).
                    if (level == 1) {
                        sumq2[k] = fma_exact(wx, xx, sumq2[k]);
                    } else {
                        sumq2[k] = sumq2[k] + opaque(wx * xx);
                    }
                }
            }
            for (var k = 0; k < 4; k = k + 1) {
                if (sumq2[k] > 0.0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                    r.x = sumqx[k] / sumq2[k];
                    best_score = r.x * sumqx[k];
                    r.y = f32(i1);
                    r.z = f32(i2);
                    r.w = f32(k);
                }
            }
        }
    }
    return r;
}
#endif

// The search's shift after the sign of the scale is settled.
fn settled_shift(r: vec4<f32>) -> i32 {
    let s = i32(r.w);
    if (r.x < 0.0) {
#ifdef QZ_IQ1_S
        return -s;
#else
        return 3 - s;
#endif
    }
    return s;
}

// Group k's levels in lq, snapped to the grid when off it (iq1_find_best_neighbour2: the
// weights themselves, the shifted values); returns the grid index, with bit 31 set when the
// levels were off the grid. (Point 0 when no neighbour scores, where the CPU reports an error.)
fn iq1_snap(k: u32, scale: f32, neg: bool) -> u32 {
    let m = map_at(pack_group(&lq, k));
    if (m >= 0) {
        return u32(m);
    }
    var best = nearest_neighbour(m, k, scale, neg);
    if (best == NO_POINT) {
        best = 0u;
    }
    set_group(&lq, k, best);
    return best | 0x80000000u;
}

// Loads sub-block ib of block `blk_i` (a block of the same dst row) into xs.
fn load_sub(blk_i: u32, ib: u32) {
    let l0 = block_elem(blk_i) + BS * ib;
    for (var i = 0u; i < BS; i = i + 1u) {
        xs[i] = load_elem(l0 + i);
    }
}

// The shift a zero sub-block ib of block `bi` gets: ggml keeps each position's last shift in
// a buffer that lives for the whole row (its quantize_iq1_* call), so it is the shift of the
// nearest earlier block of the row whose sub-block ib was searched (0 if none).
fn prev_shift(bi: u32, ib: u32, first: u32) -> i32 {
    var j = bi;
    while (j > first) {
        j = j - 1u;
        load_sub(j, ib);
        if (too_small(max_abs())) {
            continue;
        }
        var sigma2 = 0.0;
#ifdef QZ_IQ1_S
        let l0 = block_elem(j);
        var s = 0.0;
        for (var t = 0u; t < QK; t = t + 1u) {
            let v = load_elem(l0 + t);
            s = s + v * v;
        }
        sigma2 = SIGMA2_SCALE * s / f32(QK);
#endif
        iq1_weights(sigma2);
        sort_values();
        let r = best_split();
        if (r.y < 0.0) {
            return 0;
        }
        return settled_shift(r);
    }
    return 0;
}

fn lane_search(ib: u32, sigma2: f32, bi: u32, first: u32) {
    res[ib] = vec4<u32>(0u);
    res_scale[ib] = 0.0;
    iq1_weights(sigma2);
    if (too_small(max_abs())) {
        res_flag[ib] = prev_shift(bi, ib, first);
        return;
    }
    sort_values();
    let r = best_split();
    var scale = abs(r.x);
    let shift = settled_shift(r);
    let i1 = u32(max(r.y, 0.0));
    let i2 = u32(r.z);
    for (var j = 0u; j < BS; j = j + 1u) {
        var l = select(select(2, 1, j < i2), 0, j < i1);
        if (r.x < 0.0) {
            l = 2 - l;
        }
        lq[order[j]] = l;
    }
    // The shared neighbour scan reads xv and wa: for iq1 the values and the weights.
    xv = xs;
    wa = w;
    var index: array<u32, 4>;
    var all_on = true;
    for (var k = 0u; k < NG; k = k + 1u) {
        let s = iq1_snap(k, scale, negative_shift(shift, k));
        index[k] = s & 0x7fffffffu;
        all_on = all_on && s < 0x80000000u;
    }
    if (!all_on) {
        // The refit to the grid values (fused sums); kept if positive.
        var sumqx = 0.0;
        var sumq2 = 0.0;
        for (var k = 0u; k < NG; k = k + 1u) {
            let pl = point_levels(index[k]);
            let neg = negative_shift(shift, k);
            for (var i = 0u; i < 8u; i = i + 1u) {
                let q = xg(level_of(pl, i), neg);
                let wq = w[8u * k + i] * q;
                sumqx = fma_exact(wq, xs[8u * k + i], sumqx);
                sumq2 = fma_exact(wq, q, sumq2);
            }
        }
        if (sumqx > 0.0 && sumq2 > 0.0) {
            scale = sumqx / sumq2;
        }
    }
#ifdef QZ_IQ1_S
    var h = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) {
        res[ib].x = res[ib].x | ((index[k] & 0xffu) << (8u * k));
        h = h | ((index[k] >> 8u) << (3u * k));
    }
    res[ib].y = h;
#else
    res[ib].x = (index[0] & 0xffu) | ((index[1] & 0xffu) << 8u) | (((index[0] >> 8u) | ((index[1] >> 8u) << 4u)) << 16u);
#endif
    res_scale[ib] = scale;
    res_flag[ib] = shift;
}

fn finish_block() {
    for (var k = 0u; k < QBYTES; k = k + 1u) {
        blk[k] = 0u;
    }
    var max_scale = 0.0;
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        max_scale = c_max(max_scale, res_scale[ib]);
    }
#ifdef QZ_IQ1_S
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        put_u32(2u + 4u * ib, res[ib].x);
        put_u16(34u + 2u * ib, res[ib].y);
    }
    if (max_scale == 0.0) {
        return;
    }
    let d = max_scale / 15.0;
    // ggml: "1.125f is another fudge factor. Don't ask me why it is needed."
    put_u16(0u, f32_to_half(d * 1.125));
    let id = 1.0 / d;
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        let code = u32(clamp(level_code(id, res_scale[ib]), 0, 7)) | select(0u, 8u, res_flag[ib] == -1);
        put_u16(34u + 2u * ib, res[ib].y | (code << 12u));
    }
#else
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        blk[2u * ib] = res[ib].x & 0xffu;
        blk[2u * ib + 1u] = (res[ib].x >> 8u) & 0xffu;
        blk[32u + ib] = res[ib].x >> 16u;
    }
    if (max_scale == 0.0) {
        return;
    }
    // The sub-block codes, then the block scale refit to the final levels.
    var sc: array<u32, 4>;
    var d = max_scale / 15.0;
    let id = 1.0 / d;
    var sumqx = 0.0;
    var sumq2 = 0.0;
    let masks = array<u32, 4>(0x00u, 0x80u, 0x08u, 0x88u);
    for (var ib = 0u; ib < LANES; ib = ib + 1u) {
        let code = clamp(level_code(id, res_scale[ib]), 0, 7);
        sc[ib / 4u] = sc[ib / 4u] | (u32(code) << (3u * (ib % 4u)));
        let shift = res_flag[ib];
        blk[32u + ib] = blk[32u + ib] | masks[u32(shift) & 3u];
        for (var k = 0u; k < 2u; k = k + 1u) {
            let neg = negative_shift(shift, k);
            let g = 2u * ib + k;
            let index = blk[g] | ((blk[32u + ib] << (8u - 4u * k)) & 0x700u);
            let pl = point_levels(index);
            for (var i = 0u; i < 8u; i = i + 1u) {
                let e = 16u * ib + 8u * k + i;
                let q = xg(level_of(pl, i), neg) * f32(2 * code + 1);
                let wq = x[e] * x[e] * q;
                sumqx = fma_exact(wq, x[e], sumqx);
                sumq2 = fma_exact(wq, q, sumq2);
            }
        }
    }
    if (sumq2 > 0.0) {
        d = sumqx / sumq2;
    }
    // ggml: "1.1125f is another fudge factor. Don't ask me why it is needed."
    let s = f32_to_half(d * 1.1125);
    sc[0] = sc[0] | ((s & 0x000fu) << 12u);
    sc[1] = sc[1] | ((s & 0x00f0u) << 8u);
    sc[2] = sc[2] | ((s & 0x0f00u) << 4u);
    sc[3] = sc[3] | (s & 0xf000u);
    for (var k = 0u; k < 4u; k = k + 1u) {
        put_u16(48u + 2u * k, sc[k]);
    }
#endif
}
#endif

// The flat dst element where block `bi` starts, and src element l in logical order.
fn block_elem(bi: u32) -> u32 {
    let per_row = p.dst.ne.x / QK;
    return (bi / per_row) * p.dst.ne.x + (bi % per_row) * QK;
}

fn load_elem(l: u32) -> f32 {
    return load(p.offs.y + dot(unravel(l, p.src.ne), p.src.nb));
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let bi = group_index(inv);
    let ib = inv.lid;
    // Every lane loads its share of the block; a whole workgroup returns together.
    if (bi >= p.offs.w) {
        return;
    }
    let l0 = block_elem(bi);
    for (var t = ib; t < QK; t = t + LANES) {
        x[t] = load_elem(l0 + t);
    }
    workgroupBarrier();
    for (var i = 0u; i < BS; i = i + 1u) {
        xs[i] = x[BS * ib + i];
    }
    let sigma2 = SIGMA2_SCALE * sum_squares() / f32(QK);
#ifdef QZ_IQ1
    let per_row = p.dst.ne.x / QK;
    lane_search(ib, sigma2, bi, bi - bi % per_row);
#else
    lane_search(ib, sigma2);
#endif
    workgroupBarrier();
    if (ib != 0u) {
        return;
    }
    finish_block();
    let r = unravel_row(bi / (p.dst.ne.x / QK), p.dst.ne);
    store_block(p.offs.x + r.y * p.dst.nb.y + r.z * p.dst.nb.z + r.w * p.dst.nb.w + (bi % (p.dst.ne.x / QK)) * QBYTES);
}
