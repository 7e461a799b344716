// Every elementwise op: dst[i] = OP(a[i % a.ne]) (the UNARY family, SQR ... LEAKY_RELU,
// SCALE, DIAG_MASK_*, and with a repeating a REPEAT and DIAG), dst[i] = OP(a[i], b[i % b.ne])
// with B (ADD, SUB, MUL, DIV, ADD1, SILU_BACK), and with REPEAT_BACK the sum of a's
// repetitions. One invocation per element of dst, or per 32-bit word of a contiguous 16-bit
// dst (D_PAIRED: two invocations never write halves of one word).
//
// Types, by define: A_*, B_*, D_* name how a, b and dst are read or written: F32, F16, BF16
// (values computed in f32, V = f32) or RAW32, RAW16 (bits copied, V = u32).
#include "common"

struct Params {
    dst: Layout,
    a: Layout,
    // Zeros without B.
    b: Layout,
    // Element offsets of dst, a and b inside their bindings; w: elements of dst.
    offs: vec4<u32>,
    // The op's scalar parameters (SCALE: s; CLAMP: min, max; LEAKY_RELU: slope;
    // DIAG_MASK_*: the masking value).
    f: vec4<f32>,
    // DIAG_MASK_*: n_past in x.
    u: vec4<u32>,
}

@group(0) @binding(0) var<uniform> p: Params;

// Every tensor binding is read_write: tensors of one graph usually share one wgpu buffer,
// and a buffer bound both read-only and read-write in one dispatch is a usage conflict.
#ifdef A_F32
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
fn load_a(j: u32) -> f32 { return a[j]; }
#endif
#ifdef A_F16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn load_a(j: u32) -> f32 { return half_to_f32(a[j / 2u], j); }
#endif
#ifdef A_BF16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn load_a(j: u32) -> f32 { return bf16_to_f32(a[j / 2u], j); }
#endif
#ifdef A_RAW32
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn load_a(j: u32) -> u32 { return a[j]; }
#endif
#ifdef A_RAW16
@group(0) @binding(1) var<storage, read_write> a: array<u32>;
fn load_a(j: u32) -> u32 { return (a[j / 2u] >> (16u * (j % 2u))) & 0xffffu; }
#endif

#ifdef B_F32
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
fn load_b(j: u32) -> f32 { return b[j]; }
#endif
#ifdef B_F16
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
fn load_b(j: u32) -> f32 { return half_to_f32(b[j / 2u], j); }
#endif
#ifdef B_BF16
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
fn load_b(j: u32) -> f32 { return bf16_to_f32(b[j / 2u], j); }
#endif

// dst is at binding 2 without B, 3 with it.
#ifdef D_F32
@group(0) @binding({{D_BINDING}}) var<storage, read_write> dst: array<f32>;
fn store_dst(j: u32, v: f32) { dst[j] = v; }
#endif
#ifdef D_RAW32
@group(0) @binding({{D_BINDING}}) var<storage, read_write> dst: array<u32>;
fn store_dst(j: u32, v: u32) { dst[j] = v; }
#endif
// 16-bit results: `pack` gives the bits, D_PAIRED writes them a word at a time.
#ifdef D_F16
@group(0) @binding({{D_BINDING}}) var<storage, read_write> dst: array<u32>;
fn pack_dst(v: f32) -> u32 { return f32_to_half(v); }
#endif
#ifdef D_BF16
@group(0) @binding({{D_BINDING}}) var<storage, read_write> dst: array<u32>;
fn pack_dst(v: f32) -> u32 { return f32_to_bf16(v); }
#endif
#ifdef D_RAW16
@group(0) @binding({{D_BINDING}}) var<storage, read_write> dst: array<u32>;
fn pack_dst(v: u32) -> u32 { return v & 0xffffu; }
#endif

// ---- ops of one value (and its dst coordinates), as ggml-cpu computes them ----

fn op_scale(x: f32, i: vec4<u32>) -> f32 { return x * p.f.x; }
fn op_sqr(x: f32, i: vec4<u32>) -> f32 { return x * x; }
fn op_sqrt(x: f32, i: vec4<u32>) -> f32 { return sqrt(x); }
fn op_log(x: f32, i: vec4<u32>) -> f32 { return log(x); }
fn op_sin(x: f32, i: vec4<u32>) -> f32 { return sin(x); }
fn op_cos(x: f32, i: vec4<u32>) -> f32 { return cos(x); }
// ggml: MAX(MIN(x, max), min) with C's comparison macros.
fn op_clamp(x: f32, i: vec4<u32>) -> f32 {
    let t = select(p.f.y, x, x < p.f.y);
    return select(p.f.x, t, t > p.f.x);
}
fn op_leaky_relu(x: f32, i: vec4<u32>) -> f32 {
    return select(0.0, x, x > 0.0) + p.f.x * select(0.0, x, x < 0.0);
}
fn op_abs(x: f32, i: vec4<u32>) -> f32 { return abs(x); }
fn op_sgn(x: f32, i: vec4<u32>) -> f32 { return select(select(0.0, -1.0, x < 0.0), 1.0, x > 0.0); }
fn op_neg(x: f32, i: vec4<u32>) -> f32 { return -x; }
fn op_step(x: f32, i: vec4<u32>) -> f32 { return select(0.0, 1.0, x > 0.0); }
fn op_tanh(x: f32, i: vec4<u32>) -> f32 { return tanh_safe(x); }
fn op_elu(x: f32, i: vec4<u32>) -> f32 { return select(exp(x) - 1.0, x, x > 0.0); }
fn op_relu(x: f32, i: vec4<u32>) -> f32 { return select(0.0, x, x > 0.0); }
fn op_sigmoid(x: f32, i: vec4<u32>) -> f32 { return 1.0 / (1.0 + exp(-x)); }
fn op_silu(x: f32, i: vec4<u32>) -> f32 { return x / (1.0 + exp(-x)); }
fn op_hardswish(x: f32, i: vec4<u32>) -> f32 { return x * min(1.0, max(0.0, (x + 3.0) / 6.0)); }
fn op_hardsigmoid(x: f32, i: vec4<u32>) -> f32 { return min(1.0, max(0.0, (x + 3.0) / 6.0)); }
fn op_exp(x: f32, i: vec4<u32>) -> f32 { return exp(x); }
// ggml-cpu (GGML_GELU_FP16) looks GELU and GELU_QUICK up in tables of f16 results indexed by
// the f16 rounding of x; the same rounding on both sides gives the same values here.
fn op_gelu(x: f32, i: vec4<u32>) -> f32 {
    if (x <= -10.0) {
        return 0.0;
    }
    if (x >= 10.0) {
        return x;
    }
    let h = half_to_f32(f32_to_half(x), 0u);
    let g = 0.5 * h * (1.0 + tanh_safe(0.7978846 * h * (1.0 + 0.044715 * h * h)));
    return half_to_f32(f32_to_half(g), 0u);
}
fn op_gelu_quick(x: f32, i: vec4<u32>) -> f32 {
    let h = half_to_f32(f32_to_half(x), 0u);
    let g = h * (1.0 / (1.0 + exp(-1.702 * h)));
    return half_to_f32(f32_to_half(g), 0u);
}
// DIAG_MASK_INF / DIAG_MASK_ZERO: columns past n_past + row take the value in f.x.
fn op_diag_mask(x: f32, i: vec4<u32>) -> f32 { return select(x, p.f.x, i.x > p.u.x + i.y); }
// REPEAT (bits copied) and DIAG (a row on the diagonal, zero elsewhere).
fn op_copy(x: u32, i: vec4<u32>) -> u32 { return x; }
fn op_diag(x: u32, i: vec4<u32>) -> u32 { return select(0u, x, i.x == i.y); }

// tanh without the inf/inf of exp-based forms at large |x| (tanh is 1 in f32 past 9.1).
fn tanh_safe(x: f32) -> f32 {
    let ax = abs(x);
    if (ax < 1.0) {
        return tanh(x);
    }
    let t = exp(-2.0 * min(ax, 20.0));
    let r = (1.0 - t) / (1.0 + t);
    return select(r, -r, x < 0.0);
}

// ---- ops of two values ----

fn op_add(x: f32, y: f32) -> f32 { return x + y; }
fn op_sub(x: f32, y: f32) -> f32 { return x - y; }
fn op_mul(x: f32, y: f32) -> f32 { return x * y; }
fn op_div(x: f32, y: f32) -> f32 { return x / y; }
// SILU_BACK, a = x, b = dy: dy * s * (1 + x * (1 - s)), s = sigmoid(x), fused as ggml's build.
fn op_silu_back(x: f32, dy: f32) -> f32 {
    let s = 1.0 / (1.0 + exp(-x));
    return dy * s * fma(x, 1.0 - s, 1.0);
}

// The value of dst at coordinates idx.
fn value_at(idx: vec4<u32>) -> {{V}} {
#ifdef REPEAT_BACK
    // The sum of a's repetitions of dst's shape, in ggml-cpu's order (i3 outermost).
    let nr = p.a.ne / p.dst.ne;
    var sum = 0.0;
    for (var i3 = 0u; i3 < nr.w; i3 = i3 + 1u) {
        for (var i2 = 0u; i2 < nr.z; i2 = i2 + 1u) {
            for (var i1 = 0u; i1 < nr.y; i1 = i1 + 1u) {
                for (var i0 = 0u; i0 < nr.x; i0 = i0 + 1u) {
                    let j = idx + vec4<u32>(i0, i1, i2, i3) * p.dst.ne;
                    sum = sum + load_a(p.offs.y + dot(j, p.a.nb));
                }
            }
        }
    }
    return sum;
#else
    // a has dst's shape (idx % ne is idx) or repeats into it (REPEAT, DIAG).
    let x = load_a(p.offs.y + dot(idx % p.a.ne, p.a.nb));
#ifdef B
    return {{OP}}(x, load_b(p.offs.z + dot(idx % p.b.ne, p.b.nb)));
#else
    return {{OP}}(x, idx);
#endif
#endif
}

@compute @workgroup_size({{WG_SIZE}})
fn main(inv: Invocation) {
    let i = invocation_index(inv, {{WG_SIZE}}u);
#ifdef D_PAIRED
    // dst is contiguous: its elements are halves first .. end of the binding's words.
    let first = p.offs.x;
    let end = p.offs.x + p.offs.w;
    let w = first / 2u + i;
    if (2u * w >= end) {
        return;
    }
    // Halves outside dst (another tensor's) are kept; nothing else writes them in this pass.
    var word = dst[w];
    for (var h = 0u; h < 2u; h = h + 1u) {
        let g = 2u * w + h;
        if (g >= first && g < end) {
            let shift = 16u * h;
            let v = pack_dst(value_at(unravel(g - first, p.dst.ne)));
            word = (word & ~(0xffffu << shift)) | (v << shift);
        }
    }
    dst[w] = word;
#else
    if (i >= p.offs.w) {
        return;
    }
    let idx = unravel(i, p.dst.ne);
    store_dst(p.offs.x + dot(idx, p.dst.nb), value_at(idx));
#endif
}
