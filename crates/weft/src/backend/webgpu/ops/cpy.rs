//! DUP, CPY, CONT: element l of the node in logical order is element l of src0, converted.
//! Three shapes of kernel:
//! - plain types (f32, f16, bf16, i32, i16) in any strides: cpy.wgsl, one invocation per
//!   element (per 32-bit word of a contiguous 2-byte destination);
//! - out of a quantized type into f32/f16/bf16: cpy.wgsl's DQ form through dequant.wgsl;
//! - from f32/f16/bf16 into q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl (quantize.wgsl), the
//!   K-quants, iq4_xs and the ternary types (quantize_k.wgsl): one invocation per block,
//!   quantizing exactly as the CPU backend's from_float; into the grid I-quants
//!   (quantize_iq.wgsl): one workgroup per block, one invocation per sub-block, searching the
//!   grids through the CPU's own neighbour tables (a storage buffer, ops/quant.rs).

use super::quant::{is_quant_rows, qarg, qt_flag};
use super::{arg, grid, grid_for_elements, indexable, src, Dispatch, Kernel, Params, WG_ELEMENTWISE};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::Tensor;
use crate::types::Type;
use crate::Result;

pub const KERNEL: Kernel = Kernel { supports, plan };

/// Plain types cpy.wgsl reads and writes.
const PLAIN: [Type; 5] = [Type::F32, Type::F16, Type::BF16, Type::I32, Type::I16];
/// Float types: sources of quantize.wgsl, destinations of the DQ form.
const FLOATS: [Type; 3] = [Type::F32, Type::F16, Type::BF16];
/// The types quantize.wgsl quantizes into, with the flag naming each: those ggml's GPU
/// backends quantize into, then (quantize_k.wgsl) the K-quants and the ternary types, then
/// (quantize_iq.wgsl) the grid I-quants.
const QUANTIZE_INTO: [(Type, &str); 21] = [
    (Type::Q4_0, "QZ_Q4_0"),
    (Type::Q4_1, "QZ_Q4_1"),
    (Type::Q5_0, "QZ_Q5_0"),
    (Type::Q5_1, "QZ_Q5_1"),
    (Type::Q8_0, "QZ_Q8_0"),
    (Type::IQ4_NL, "QZ_IQ4_NL"),
    (Type::Q2_K, "QZ_Q2_K"),
    (Type::Q3_K, "QZ_Q3_K"),
    (Type::Q4_K, "QZ_Q4_K"),
    (Type::Q5_K, "QZ_Q5_K"),
    (Type::Q6_K, "QZ_Q6_K"),
    (Type::IQ4_XS, "QZ_IQ4_XS"),
    (Type::TQ1_0, "QZ_TQ1_0"),
    (Type::TQ2_0, "QZ_TQ2_0"),
    (Type::IQ2_XXS, "QZ_IQ2_XXS"),
    (Type::IQ2_XS, "QZ_IQ2_XS"),
    (Type::IQ2_S, "QZ_IQ2_S"),
    (Type::IQ3_XXS, "QZ_IQ3_XXS"),
    (Type::IQ3_S, "QZ_IQ3_S"),
    (Type::IQ1_S, "QZ_IQ1_S"),
    (Type::IQ1_M, "QZ_IQ1_M"),
];

fn qz_flag(t: Type) -> Option<&'static str> {
    QUANTIZE_INTO.iter().find(|&&(q, _)| q == t).map(|&(_, flag)| flag)
}

/// The grid I-quants' quantizers run one workgroup per block and one invocation per
/// sub-block (their searches are long: lavapipe's loop budget counts per invocation, see
/// ops/loops.rs); this is that sub-block count.
pub fn grid_lanes(t: Type) -> Option<u32> {
    match t {
        Type::IQ2_XXS | Type::IQ3_XXS | Type::IQ3_S | Type::IQ1_S => Some(8),
        Type::IQ2_XS | Type::IQ2_S | Type::IQ1_M => Some(16),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Form {
    /// Plain to plain; `pairs`: a contiguous 2-byte destination written word by word.
    Plain { s: Type, d: Type, pairs: bool },
    /// Quantized rows to a float type.
    Dq { s: Type, d: Type },
    /// A float type to quantized rows.
    Quantize { s: Type, d: Type },
}

fn form(node: &Tensor) -> Option<Form> {
    let s = node.src(0)?;
    if s.nelements() != node.nelements() {
        return None;
    }
    let (st, dt) = (s.ty(), node.ty());
    let float = |t: &Tensor| FLOATS.contains(&t.ty()) && indexable(t);
    match (st.is_quantized(), dt.is_quantized()) {
        (false, false) => {
            let ok = PLAIN.contains(&st) && PLAIN.contains(&dt) && indexable(s) && indexable(node);
            ok.then_some(Form::Plain { s: st, d: dt, pairs: dt.type_size() == 2 && node.is_contiguous() })
        }
        (true, false) => (is_quant_rows(s) && float(node)).then_some(Form::Dq { s: st, d: dt }),
        (false, true) => {
            (float(s) && qz_flag(dt).is_some() && is_quant_rows(node)).then_some(Form::Quantize { s: st, d: dt })
        }
        (true, true) => None,
    }
}

fn supports(node: &Tensor) -> bool {
    form(node).is_some()
}

fn ty_flag(prefix: &str, t: Type) -> &'static str {
    match (prefix, t) {
        ("SRC", Type::F16) => "SRC_F16",
        ("SRC", Type::BF16) => "SRC_BF16",
        ("SRC", Type::I32) => "SRC_I32",
        ("SRC", Type::I16) => "SRC_I16",
        ("SRC", _) => "SRC_F32",
        (_, Type::F16) => "DST_F16",
        (_, Type::BF16) => "DST_BF16",
        (_, Type::I32) => "DST_I32",
        (_, Type::I16) => "DST_I16",
        _ => "DST_F32",
    }
}

fn key(f: Form) -> PipelineKey {
    let base = |shader| PipelineKey::new(shader, "main").define("WG_SIZE", WG_ELEMENTWISE);
    match f {
        Form::Plain { s, d, pairs } => {
            let mut k = base("cpy").flag(ty_flag("SRC", s)).flag(ty_flag("DST", d));
            if s == d {
                k = k.flag("SAME");
            }
            if s.type_size() == 2 {
                k = k.flag("SRC_2B");
            }
            if s.is_integer() {
                k = k.flag("SRC_INT");
            }
            if d.type_size() == 2 {
                k = k.flag(if pairs { "DST_PAIRS" } else { "DST_ATOMIC" });
            }
            k
        }
        Form::Dq { s, d } => {
            let k = base("cpy").flag("DQ").flag(qt_flag(s).unwrap_or("QT_F32")).flag(ty_flag("DST", d));
            if d.type_size() == 2 {
                k.flag("DST_ATOMIC")
            } else {
                k
            }
        }
        Form::Quantize { s, d } => {
            let qz = qz_flag(d).unwrap_or("QZ_Q4_0");
            // Flags for the code some types share (see quantize.wgsl's head).
            let shared = [
                (d.blck_size() == 256, "QZ_SUPER"),
                (matches!(d, Type::Q4_K | Type::Q5_K), "QZ_K45"),
                (matches!(d, Type::IQ4_NL | Type::IQ4_XS), "QZ_IQ4"),
                (matches!(d, Type::IQ1_S | Type::IQ1_M), "QZ_IQ1"),
            ];
            let k = match grid_lanes(d) {
                Some(lanes) => PipelineKey::new("quantize", "main").define("WG_SIZE", lanes).flag("QZ_GRID"),
                None => base("quantize"),
            };
            let k = k.flag(qz).flag(ty_flag("SRC", s));
            shared.into_iter().filter(|&(on, _)| on).fold(k, |k, (_, flag)| k.flag(flag))
        }
    }
}

/// Every variant this kernel compiles, for the shader validation test.
#[cfg(test)]
pub fn variants() -> Vec<PipelineKey> {
    let mut v = Vec::new();
    for s in PLAIN {
        for d in PLAIN {
            let pairs = [false, true];
            let pairs: &[bool] = if d.type_size() == 2 { &pairs } else { &pairs[..1] };
            v.extend(pairs.iter().map(|&pairs| key(Form::Plain { s, d, pairs })));
        }
    }
    for s in super::quant::qt_types().filter(|t| t.is_quantized()) {
        v.extend(FLOATS.map(|d| key(Form::Dq { s, d })));
    }
    for (d, _) in QUANTIZE_INTO {
        v.extend(FLOATS.map(|s| key(Form::Quantize { s, d })));
    }
    v
}

fn plan(node: &Tensor, ctx: &GpuContext) -> Result<Option<Dispatch>> {
    let f = form(node).ok_or_else(|| crate::backend::unsupported("WebGPU", node))?;
    let s_t = src(node, 0)?;
    let (params, s_binding, d_binding, groups) = match f {
        Form::Plain { pairs, .. } => {
            let s = arg(ctx, s_t, 1)?;
            let d = arg(ctx, node, 2)?;
            let n = d.nelements;
            // Invocations: elements, or the 32-bit words a contiguous 2-byte dst spans.
            let count = if pairs && n > 0 { (d.elem_offset + n - 1) / 2 - d.elem_offset / 2 + 1 } else { n };
            let params = Params::default()
                .u32s(&d.layout)
                .u32s(&s.layout)
                .u32s(&[d.elem_offset, s.elem_offset, 0, count, n])
                .finish();
            (params, s.binding, d.binding, grid_for_elements(ctx, count, WG_ELEMENTWISE)?)
        }
        Form::Dq { .. } => {
            let s = qarg(ctx, s_t, 1)?;
            let d = arg(ctx, node, 2)?;
            let n = d.nelements / 4;
            let params = Params::default()
                .u32s(&d.layout)
                .u32s(&s.layout)
                .u32s(&[d.elem_offset, s.byte_offset, 0, n, d.nelements])
                .finish();
            (params, s.binding, d.binding, grid_for_elements(ctx, n, WG_ELEMENTWISE)?)
        }
        Form::Quantize { d: dt, .. } => {
            let s = arg(ctx, s_t, 1)?;
            let d = qarg(ctx, node, 2)?;
            let n = d.nelements / dt.blck_size() as u32;
            let params =
                Params::default().u32s(&d.layout).u32s(&s.layout).u32s(&[d.byte_offset, s.elem_offset, 0, n]).finish();
            // One invocation per block, or for the grid I-quants one workgroup.
            let groups = match grid_lanes(dt) {
                Some(_) => grid(ctx, n as u64)?,
                None => grid_for_elements(ctx, n, WG_ELEMENTWISE)?,
            };
            (params, s.binding, d.binding, groups)
        }
    };
    Ok(Some(Dispatch { key: key(f), params, bindings: vec![s_binding, d_binding], groups }))
}
