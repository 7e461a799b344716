// FLASH_ATTN_EXT: out = softmax(scale * q k^T + slope * mask) v for Q_ROWS consecutive query
// rows (iq1) of one head and batch per workgroup, with an online softmax over chunks of
// WG_SIZE keys (ggml's CPU runs the same recurrence one key at a time; a chunk rescales once
// by exp(M_old - M_new)).
//
// Why several rows: every query row of a head reads the head's whole K and V, and reading
// (dequantizing) a K or V element costs more than the multiply-add it feeds. A workgroup
// reads each K and V row once for its Q_ROWS rows; each row's arithmetic is the one-row
// recurrence's, step for step, so the results do not depend on Q_ROWS. (Lavapipe, the CI's
// Vulkan, on 2 cores: hs = 256, nh = 32, kv = 1024, nb = 35, q4_0 K/V 1.9 s a compute with
// one row a workgroup, 1.1 s with eight: ops/flash_attn.rs.) The host picks Q_ROWS = 1 for a
// single query row (decoding).
//
// Per chunk: invocation t scores key c0 + t against the workgroup's query rows held in
// workgroup memory (a whole K row each: simple, and no reduction barriers), the chunk's
// maximum per row updates that row's running maximum M (partial maxima over slices of the
// chunk, then over the slices), each invocation turns its scores into weights p, and then
// invocation t accumulates the weighted V rows for the output dimensions 4t..4t+3
// (+ 4 * WG_SIZE per further ACC_N) of every row, coalesced across the workgroup.
//
// q: f32 (f16 with Q_F16), read in elements. K and V: bound as 32-bit words and addressed
// in bytes, f16 (KV_F16) or any block type of dequant.wgsl (KV_QUANT with its QT_ flag; one
// type for both, q_word picks the binding by kv_sel). The query is rounded to f16 for f16
// keys, as ggml's CPU converts it to K's vec_dot type first. mask: f16, one matrix, row iq1.
// ALiBi slopes per head when max_bias > 0; logit softcap: softcap * tanh(s * scale / softcap)
// (the host divides scale). dst is ggml's permuted [d, n_head, n_batch, ne3].
#include "common"

struct Params {
    dst: Layout,
    q: Layout,
    // K and V: ne, and nb in bytes.
    k: Layout,
    v: Layout,
    mask: Layout,
    // Element offsets of dst, q and mask inside their bindings; w: workgroups
    // (ceil(nq1 / Q_ROWS) * nq2 * nq3).
    offs: vec4<u32>,
    // x, y: byte offsets of K and V; z, w: q heads per K/V head in dims 2 and 3.
    kv: vec4<u32>,
    scale: f32,
    softcap: f32,
    max_bias: f32,
    m0: f32,
    m1: f32,
    n_head_log2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
#ifdef Q_F16
@group(0) @binding(1) var<storage, read_write> query: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> query: array<f32>;
#endif
@group(0) @binding(2) var<storage, read_write> kb: array<u32>;
@group(0) @binding(3) var<storage, read_write> vb: array<u32>;
#ifdef MASK
@group(0) @binding(4) var<storage, read_write> mask: array<u32>;
#endif
@group(0) @binding(5) var<storage, read_write> dst: array<f32>;

// 0: reads go to K, 1: to V.
var<private> kv_sel: u32;

fn q_word(i: u32) -> u32 {
    if (kv_sel == 0u) {
        return kb[i];
    }
    return vb[i];
}

#ifdef KV_QUANT
// row4: elements 4g .. 4g+3 of the K or V row starting at a byte.
#include "any_row"
#endif

#ifdef KV_F16
// Four f16 values starting at an even byte offset of the selected binding: two words when
// the offset is word-aligned (rows of an even head size), three otherwise.
fn kv4(byte: u32) -> vec4<f32> {
    let w = byte / 4u;
    let a = q_word(w);
    let b = q_word(w + 1u);
    if (byte % 4u == 0u) {
        return vec4<f32>(half_to_f32(a, 0u), half_to_f32(a, 1u), half_to_f32(b, 0u), half_to_f32(b, 1u));
    }
    let c = q_word(w + 2u);
    return vec4<f32>(half_to_f32(a, 1u), half_to_f32(b, 0u), half_to_f32(b, 1u), half_to_f32(c, 0u));
}
#endif

#ifndef KV_QUANT
// Elements 4g .. 4g+3 of the K or V row starting at byte `row`.
fn row4(row: u32, g: u32) -> vec4<f32> {
    return kv4(row + 8u * g);
}
#endif

const LOWEST: f32 = -3.40282347e38;

// Query row r's vec4 group g at [r * Q4_LEN + g]; scores and weights of row r, key c0 + j
// at [r * WG_SIZE + j]; the partial maxima of the chunk's slices.
var<workgroup> query_sh: array<vec4<f32>, {{QUERY_LEN}}>;
var<workgroup> s_sh: array<f32, {{SCORE_LEN}}>;
var<workgroup> p_sh: array<f32, {{SCORE_LEN}}>;
var<workgroup> max_sh: array<f32, {{WG_SIZE}}>;

fn query_at(i: u32) -> f32 {
#ifdef Q_F16
    return half_to_f32(query[i / 2u], i);
#else
    return query[i];
#endif
}

// The query element as the keys' dot product sees it.
fn query_conv(x: f32) -> f32 {
#ifdef KV_F16
    return half_to_f32(f32_to_half(x), 0u);
#else
    return x;
#endif
}

// tanh without overflow for large |x|.
fn tanh_safe(x: f32) -> f32 {
    let t = exp(-2.0 * abs(x));
    let r = (1.0 - t) / (1.0 + t);
    return select(r, -r, x < 0.0);
}

fn alibi_slope(h: u32) -> f32 {
    if (p.max_bias <= 0.0) {
        return 1.0;
    }
    if (h < p.n_head_log2) {
        return pow(p.m0, f32(h + 1u));
    }
    return pow(p.m1, f32(2u * (h - p.n_head_log2) + 1u));
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let tile = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (tile >= p.offs.w) {
        return;
    }
    let nq1 = p.q.ne.y;
    let nq2 = p.q.ne.z;
    let tiles1 = (nq1 + {{Q_ROWS}}u - 1u) / {{Q_ROWS}}u;
    let iq1_0 = (tile % tiles1) * {{Q_ROWS}}u;
    let iq2 = (tile / tiles1) % nq2;
    let iq3 = tile / (tiles1 * nq2);
    // The workgroup's rows: iq1_0 .. iq1_0 + nq - 1.
    let nq = min({{Q_ROWS}}u, nq1 - iq1_0);
    let d = p.q.ne.x;
    let g4 = d / 4u;
    let n_kv = p.k.ne.y;
    let ik2 = iq2 / p.kv.z;
    let ik3 = iq3 / p.kv.w;
    let k_base = p.kv.x + ik2 * p.k.nb.z + ik3 * p.k.nb.w;
    let v_base = p.kv.y + ik2 * p.v.nb.z + ik3 * p.v.nb.w;
    let slope = alibi_slope(iq2);

    let q_base = p.offs.y + iq1_0 * p.q.nb.y + iq2 * p.q.nb.z + iq3 * p.q.nb.w;
    for (var e = lid; e < nq * g4; e = e + {{WG_SIZE}}u) {
        let r = e / g4;
        let g = e % g4;
        let i = q_base + r * p.q.nb.y + 4u * g * p.q.nb.x;
        query_sh[r * {{Q4_LEN}}u + g] = vec4<f32>(
            query_conv(query_at(i)),
            query_conv(query_at(i + p.q.nb.x)),
            query_conv(query_at(i + 2u * p.q.nb.x)),
            query_conv(query_at(i + 3u * p.q.nb.x)),
        );
    }
    workgroupBarrier();

    // Per row: running maximum, running sum of weights, output accumulators [r * ACC_N + a].
    var m: array<f32, {{Q_ROWS}}>;
    var s_sum: array<f32, {{Q_ROWS}}>;
    var acc: array<vec4<f32>, {{ACC_ROWS}}>;
    for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
        m[r] = LOWEST;
    }

    for (var c0 = 0u; c0 < n_kv; c0 = c0 + {{WG_SIZE}}u) {
        // Scores of key c0 + lid; LOWEST marks a key left out (masked to -inf, or past n_kv).
        let ic = c0 + lid;
        var s: array<f32, {{Q_ROWS}}>;
        for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
            s[r] = LOWEST;
        }
        if (ic < n_kv) {
            // -inf (and NaN-free) masks skip the key, as ggml's CPU does; the K row is read
            // when any row keeps it.
            var mv: array<f32, {{Q_ROWS}}>;
            var any_kept = false;
            for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
                if (r < nq) {
#ifdef MASK
                    let mi = p.offs.z + ic * p.mask.nb.x + (iq1_0 + r) * p.mask.nb.y;
                    mv[r] = slope * half_to_f32(mask[mi / 2u], mi);
#endif
                    any_kept = any_kept || mv[r] >= LOWEST;
                }
            }
            if (any_kept) {
                kv_sel = 0u;
                let krow = k_base + ic * p.k.nb.y;
                var dot4: array<vec4<f32>, {{Q_ROWS}}>;
                for (var g = 0u; g < g4; g = g + 1u) {
                    let k4 = row4(krow, g);
                    // Every row, kept or not (rows past nq read zeros: their scores go unused).
                    for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
                        dot4[r] = dot4[r] + k4 * query_sh[r * {{Q4_LEN}}u + g];
                    }
                }
                for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
                    if (r < nq && mv[r] >= LOWEST) {
                        let dr = dot4[r];
                        var x = ((dr.x + dr.y) + (dr.z + dr.w)) * p.scale;
                        if (p.softcap != 0.0) {
                            x = p.softcap * tanh_safe(x);
                        }
                        s[r] = x + mv[r];
                    }
                }
            }
        }
        for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
            s_sh[r * {{WG_SIZE}}u + lid] = s[r];
        }
        workgroupBarrier();

        // Invocation lid: the maximum of row lid / SLICES over keys (lid % SLICES) * Q_ROWS ..
        // + Q_ROWS - 1 of the chunk (keys past n_kv hold LOWEST).
        let mr = lid / {{SLICES}}u;
        let j0 = (lid % {{SLICES}}u) * {{Q_ROWS}}u;
        var pmax = LOWEST;
        for (var j = j0; j < j0 + {{Q_ROWS}}u; j = j + 1u) {
            pmax = max(pmax, s_sh[mr * {{WG_SIZE}}u + j]);
        }
        max_sh[lid] = pmax;
        workgroupBarrier();

        let n_c = min({{WG_SIZE}}u, n_kv - c0);
        var ms: array<f32, {{Q_ROWS}}>;
        for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
            var cmax = LOWEST;
            for (var t = 0u; t < {{SLICES}}u; t = t + 1u) {
                cmax = max(cmax, max_sh[r * {{SLICES}}u + t]);
            }
            let m_new = max(m[r], cmax);
            ms[r] = exp(m[r] - m_new);
            m[r] = m_new;
            p_sh[r * {{WG_SIZE}}u + lid] = select(exp(s[r] - m_new), 0.0, s[r] == LOWEST);
        }
        workgroupBarrier();

        var part: array<f32, {{Q_ROWS}}>;
        kv_sel = 1u;
        for (var e = 0u; e < {{ACC_ROWS}}u; e = e + 1u) {
            acc[e] = acc[e] * ms[e / {{ACC_N}}u];
        }
        for (var j = 0u; j < n_c; j = j + 1u) {
            var w: array<f32, {{Q_ROWS}}>;
            var any_w = false;
            for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
                w[r] = p_sh[r * {{WG_SIZE}}u + j];
                part[r] = part[r] + w[r];
                any_w = any_w || w[r] != 0.0;
            }
            // A weight of 0 leaves its row's accumulators alone (an inf in V stays out).
            if (any_w) {
                let vrow = v_base + (c0 + j) * p.v.nb.y;
                for (var a = 0u; a < {{ACC_N}}u; a = a + 1u) {
                    let g = lid + a * {{WG_SIZE}}u;
                    if (g < g4) {
                        let v4 = row4(vrow, g);
                        for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
                            let e = r * {{ACC_N}}u + a;
                            acc[e] = select(acc[e], fma(v4, vec4<f32>(w[r]), acc[e]), w[r] != 0.0);
                        }
                    }
                }
            }
        }
        for (var r = 0u; r < {{Q_ROWS}}u; r = r + 1u) {
            s_sum[r] = s_sum[r] * ms[r] + part[r];
        }
        workgroupBarrier();
    }

    for (var r = 0u; r < nq; r = r + 1u) {
        let inv_s = 1.0 / s_sum[r];
        let d_base = p.offs.x + iq2 * p.dst.nb.y + (iq1_0 + r) * p.dst.nb.z + iq3 * p.dst.nb.w;
        for (var a = 0u; a < {{ACC_N}}u; a = a + 1u) {
            let g = lid + a * {{WG_SIZE}}u;
            if (g < g4) {
                let o = acc[r * {{ACC_N}}u + a] * inv_s;
                let i = d_base + 4u * g * p.dst.nb.x;
                dst[i] = o.x;
                dst[i + p.dst.nb.x] = o.y;
                dst[i + 2u * p.dst.nb.x] = o.z;
                dst[i + 3u * p.dst.nb.x] = o.w;
            }
        }
    }
}
