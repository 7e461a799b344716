// FLASH_ATTN_EXT: out = softmax(scale * q k^T + slope * mask) v for one query row per
// workgroup, with an online softmax over chunks of WG_SIZE keys (ggml's CPU runs the same
// recurrence one key at a time; a chunk rescales once by exp(M_old - M_new)).
//
// Per chunk: invocation t scores key c0 + t against the query row held in workgroup memory
// (a whole K row each: simple, and no reduction barriers), the chunk's maximum updates the
// running maximum M, each invocation turns its score into a weight p, and then invocation t
// accumulates the weighted V rows for the output dimensions 4t..4t+3 (+ 4 * WG_SIZE per
// further ACC_N), coalesced across the workgroup.
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
    // Element offsets of dst, q and mask inside their bindings; w: rows (nq1 * nq2 * nq3).
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

var<workgroup> query_sh: array<vec4<f32>, {{Q4_LEN}}>;
var<workgroup> s_sh: array<f32, {{WG_SIZE}}>;
var<workgroup> p_sh: array<f32, {{WG_SIZE}}>;

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
    let row = group_index(inv);
    let lid = inv.lid;
    // Uniform per workgroup, so the barriers below stay in uniform control flow.
    if (row >= p.offs.w) {
        return;
    }
    let nq1 = p.q.ne.y;
    let nq2 = p.q.ne.z;
    let iq1 = row % nq1;
    let iq2 = (row / nq1) % nq2;
    let iq3 = row / (nq1 * nq2);
    let d = p.q.ne.x;
    let g4 = d / 4u;
    let n_kv = p.k.ne.y;
    let ik2 = iq2 / p.kv.z;
    let ik3 = iq3 / p.kv.w;
    let k_base = p.kv.x + ik2 * p.k.nb.z + ik3 * p.k.nb.w;
    let v_base = p.kv.y + ik2 * p.v.nb.z + ik3 * p.v.nb.w;
    let slope = alibi_slope(iq2);

    let q_base = p.offs.y + iq1 * p.q.nb.y + iq2 * p.q.nb.z + iq3 * p.q.nb.w;
    for (var g = lid; g < g4; g = g + {{WG_SIZE}}u) {
        let i = q_base + 4u * g * p.q.nb.x;
        query_sh[g] = vec4<f32>(
            query_conv(query_at(i)),
            query_conv(query_at(i + p.q.nb.x)),
            query_conv(query_at(i + 2u * p.q.nb.x)),
            query_conv(query_at(i + 3u * p.q.nb.x)),
        );
    }
    workgroupBarrier();

    var m = LOWEST;
    var s_sum = 0.0;
    var acc: array<vec4<f32>, {{ACC_N}}>;
    for (var a = 0u; a < {{ACC_N}}u; a = a + 1u) {
        acc[a] = vec4<f32>(0.0);
    }

    for (var c0 = 0u; c0 < n_kv; c0 = c0 + {{WG_SIZE}}u) {
        // Score of key c0 + lid; LOWEST marks a key left out (masked to -inf, or past n_kv).
        let ic = c0 + lid;
        var s = LOWEST;
        if (ic < n_kv) {
            var mv = 0.0;
#ifdef MASK
            let mi = p.offs.z + ic * p.mask.nb.x + iq1 * p.mask.nb.y;
            mv = slope * half_to_f32(mask[mi / 2u], mi);
#endif
            // -inf (and NaN-free) masks skip the key, as ggml's CPU does.
            if (mv >= LOWEST) {
                kv_sel = 0u;
                let krow = k_base + ic * p.k.nb.y;
                var dot4 = vec4<f32>(0.0);
                for (var g = 0u; g < g4; g = g + 1u) {
                    dot4 = dot4 + row4(krow, g) * query_sh[g];
                }
                var x = ((dot4.x + dot4.y) + (dot4.z + dot4.w)) * p.scale;
                if (p.softcap != 0.0) {
                    x = p.softcap * tanh_safe(x);
                }
                s = x + mv;
            }
        }
        s_sh[lid] = s;
        workgroupBarrier();

        var cmax = LOWEST;
        let n_c = min({{WG_SIZE}}u, n_kv - c0);
        for (var j = 0u; j < n_c; j = j + 1u) {
            cmax = max(cmax, s_sh[j]);
        }
        let m_new = max(m, cmax);
        let ms = exp(m - m_new);
        m = m_new;
        p_sh[lid] = select(exp(s - m_new), 0.0, s == LOWEST);
        workgroupBarrier();

        var part = 0.0;
        kv_sel = 1u;
        for (var a = 0u; a < {{ACC_N}}u; a = a + 1u) {
            acc[a] = acc[a] * ms;
        }
        for (var j = 0u; j < n_c; j = j + 1u) {
            let w = p_sh[j];
            part = part + w;
            if (w != 0.0) {
                let vrow = v_base + (c0 + j) * p.v.nb.y;
                for (var a = 0u; a < {{ACC_N}}u; a = a + 1u) {
                    let g = lid + a * {{WG_SIZE}}u;
                    if (g < g4) {
                        acc[a] = fma(row4(vrow, g), vec4<f32>(w), acc[a]);
                    }
                }
            }
        }
        s_sum = s_sum * ms + part;
        workgroupBarrier();
    }

    let inv_s = 1.0 / s_sum;
    let d_base = p.offs.x + iq2 * p.dst.nb.y + iq1 * p.dst.nb.z + iq3 * p.dst.nb.w;
    for (var a = 0u; a < {{ACC_N}}u; a = a + 1u) {
        let g = lid + a * {{WG_SIZE}}u;
        if (g < g4) {
            let r = acc[a] * inv_s;
            let i = d_base + 4u * g * p.dst.nb.x;
            dst[i] = r.x;
            dst[i + p.dst.nb.x] = r.y;
            dst[i + 2u * p.dst.nb.x] = r.z;
            dst[i + 3u * p.dst.nb.x] = r.w;
        }
    }
}
