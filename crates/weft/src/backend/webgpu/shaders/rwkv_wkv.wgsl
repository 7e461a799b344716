// RWKV_WKV (RWKV v6 time mixing), as the CPU backend computes it. Per sequence and head,
// token by token, with an S x S state (rows i: key channels, columns j: value channels):
//   y[t, j]      = sum_i r[t, i] * (k[t, i] * v[t, j] * tf[i] + state[i, j])
//   state[i, j] <- state[i, j] * td[t, i] + k[t, i] * v[t, j]
// Column j of the state never meets another column, so one invocation per (sequence,
// head, j) runs the whole recurrence, keeping its column in dst's state block (y for
// every token first, then each sequence's final state), with the CPU backend's order and
// fused multiply-adds. Every source is packed f32.
#include "common"

struct Params {
    // Element offsets of dst, k, v and r inside their bindings.
    offs0: vec4<u32>,
    // Element offsets of tf, td and the state; w: invocations (n_seqs * H * S).
    offs1: vec4<u32>,
    // S (head size), H (heads), n_tokens, n_seqs.
    dims: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;
// read_write for the reason given in elementwise.wgsl.
@group(0) @binding(1) var<storage, read_write> k: array<f32>;
@group(0) @binding(2) var<storage, read_write> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> r: array<f32>;
@group(0) @binding(4) var<storage, read_write> tf: array<f32>;
@group(0) @binding(5) var<storage, read_write> td: array<f32>;
@group(0) @binding(6) var<storage, read_write> state: array<f32>;
@group(0) @binding(7) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let w = invocation_index(inv, {{WG_SIZE}}u);
    if (w >= p.offs1.w) {
        return;
    }
    let n = p.dims.x;
    let h = p.dims.y;
    let n_tokens = p.dims.z;
    let c = n * h;
    let j = w % n;
    let head = (w / n) % h;
    let seq = w / c;
    let seq_tokens = n_tokens / p.dims.w;
    let state_at = seq * n * c + head * n * n;
    let col = p.offs0.x + n_tokens * c + state_at + j;
    for (var i = 0u; i < n; i = i + 1u) {
        dst[col + i * n] = state[p.offs1.z + state_at + i * n + j];
    }
    for (var t = seq * seq_tokens; t < (seq + 1u) * seq_tokens; t = t + 1u) {
        let th = t * c + head * n;
        let v_j = v[p.offs0.z + th + j];
        var y = 0.0;
        for (var i = 0u; i < n; i = i + 1u) {
            let st = dst[col + i * n];
            let kv = v_j * k[p.offs0.y + th + i];
            y = fma(fma(kv, tf[p.offs1.x + head * n + i], st), r[p.offs0.w + th + i], y);
            dst[col + i * n] = fma(st, td[p.offs1.y + th + i], kv);
        }
        dst[p.offs0.x + th + j] = y;
    }
}
