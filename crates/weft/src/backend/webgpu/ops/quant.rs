//! What kernels reading quantized (or f16/bf16) tensors through `shaders/dequant.wgsl` share:
//! the `QT_<TYPE>` flag that picks a type's section of that library, and the binding of a
//! tensor addressed in bytes (quantized rows are runs of blocks, whose strides are bytes,
//! not whole elements: see [`qarg`]).
//!
//! The I-quants' grids live in `shaders/iq_tables.wgsl`, generated from the engine's own
//! tables (`types/quant/grids.rs`, `grid_iq1s.rs`); a test below fails when they differ.

use super::{bind_range, layout_of, Binding};
use crate::backend::webgpu::context::GpuContext;
use crate::tensor::{Tensor, MAX_DIMS};
use crate::types::Type;
use crate::{Error, Result};

/// The dequant.wgsl flag of `ty`, None for types it does not decode (Q8_1 and Q8_K, which
/// are activation formats, the CPU's repacked Q4_0 layouts and the integer types).
pub fn qt_flag(ty: Type) -> Option<&'static str> {
    Some(match ty {
        Type::F32 => "QT_F32",
        Type::F16 => "QT_F16",
        Type::BF16 => "QT_BF16",
        Type::Q4_0 => "QT_Q4_0",
        Type::Q4_1 => "QT_Q4_1",
        Type::Q5_0 => "QT_Q5_0",
        Type::Q5_1 => "QT_Q5_1",
        Type::Q8_0 => "QT_Q8_0",
        Type::Q2_K => "QT_Q2_K",
        Type::Q3_K => "QT_Q3_K",
        Type::Q4_K => "QT_Q4_K",
        Type::Q5_K => "QT_Q5_K",
        Type::Q6_K => "QT_Q6_K",
        Type::IQ2_XXS => "QT_IQ2_XXS",
        Type::IQ2_XS => "QT_IQ2_XS",
        Type::IQ2_S => "QT_IQ2_S",
        Type::IQ3_XXS => "QT_IQ3_XXS",
        Type::IQ3_S => "QT_IQ3_S",
        Type::IQ1_S => "QT_IQ1_S",
        Type::IQ1_M => "QT_IQ1_M",
        Type::IQ4_NL => "QT_IQ4_NL",
        Type::IQ4_XS => "QT_IQ4_XS",
        Type::TQ1_0 => "QT_TQ1_0",
        Type::TQ2_0 => "QT_TQ2_0",
        _ => return None,
    })
}

/// Whether tensors of `ty` are refused on this device: the I-quants whose dequantization
/// indexes the big grid tables of iq_tables.wgsl. lavapipe's LLVM takes minutes to compile
/// a shader that indexes them (WGSL `const` arrays, up to 2048 entries, copied into every
/// invocation), which stalls a graph and the suite; until the tables move into a storage
/// buffer they are refused (the kernels and their naga validation stay), and
/// `WEFT_WEBGPU_IQ_GRIDS=1` opts in.
pub fn grid_refused(ty: Type) -> bool {
    static OPT_IN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    matches!(ty, Type::IQ2_XXS | Type::IQ2_XS | Type::IQ2_S | Type::IQ3_XXS | Type::IQ3_S | Type::IQ1_S | Type::IQ1_M)
        && !*OPT_IN.get_or_init(|| std::env::var("WEFT_WEBGPU_IQ_GRIDS").is_ok_and(|v| v == "1"))
}

/// Every type [`qt_flag`] knows: the quantized ones and the three float types.
#[cfg(test)]
pub fn qt_types() -> impl Iterator<Item = Type> {
    Type::ALL.iter().copied().filter(|&t| qt_flag(t).is_some())
}

/// A tensor as a shader addressing it in bytes sees it.
pub struct QArg {
    pub binding: Binding,
    /// Byte of the tensor's start inside the binding.
    pub byte_offset: u32,
    /// ne (elements), then nb (bytes): the WGSL `Layout` struct, nb in bytes.
    pub layout: [u32; 2 * MAX_DIMS],
    pub nelements: u32,
}

/// Whether `t`'s strides and size fit u32 byte offsets: what a shader addressing it in
/// bytes assumes.
pub fn byte_addressable(t: &Tensor) -> bool {
    t.nb().iter().all(|&nb| nb <= u32::MAX as usize)
        && t.nelements() <= u32::MAX as i64
        && t.nbytes() < (u32::MAX - 8) as usize
}

/// Quantized rows dequant.wgsl reads: a type it decodes, packed blocks along dim 0.
pub fn is_quant_rows(t: &Tensor) -> bool {
    t.ty().is_quantized() && qt_flag(t.ty()).is_some() && t.nb()[0] == t.ty().type_size() && byte_addressable(t)
}

/// Bind `t` (any type) at `@binding(binding)` (see [`bind_range`](super::bind_range)) for a
/// shader addressing it in bytes (`q_word` reading 32-bit words of it).
pub fn qarg(ctx: &GpuContext, t: &Tensor, binding: u32) -> Result<QArg> {
    let (binding, at) = bind_range(ctx, t, binding)?;
    if !byte_addressable(t) {
        return Err(Error::unsupported(format!(
            "WebGPU: tensor '{}' (strides {:?}, {} bytes) is not addressable in u32 bytes",
            t.label(),
            t.nb(),
            t.nbytes()
        )));
    }
    Ok(QArg { binding, byte_offset: at as u32, layout: layout_of(t, 1), nelements: t.nelements() as u32 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::webgpu::shaders::shader;
    use crate::types::quant::grid_iq1s::IQ1S_GRID;
    use crate::types::quant::grids::{
        IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL,
    };

    /// iq_tables.wgsl as the engine's tables give it.
    fn iq_tables_wgsl() -> String {
        fn table(out: &mut String, name: &str, ty: &str, items: Vec<String>, per_line: usize) {
            out.push_str(&format!("\nconst {name} = array<{ty}, {}>(\n", items.len()));
            for line in items.chunks(per_line) {
                out.push_str(&format!("    {},\n", line.join(", ")));
            }
            out.push_str(");\n");
        }
        let hex = |w: u32| format!("0x{w:08x}u");
        let split = |g: &[u64]| g.iter().flat_map(|&v| [hex(v as u32), hex((v >> 32) as u32)]).collect::<Vec<_>>();
        let mut s = String::from(
            "// The I-quant grids and tables of ggml-common.h as WGSL constants, included by dequant.wgsl's
// IQ sections. GENERATED from the engine's tables (crates/weft/src/types/quant/grids.rs and
// grid_iq1s.rs); the test ops::quant::tests::iq_tables_match_the_engine fails when they differ
// and rewrites this file when run with WEFT_WRITE_IQ_TABLES=1. Do not edit by hand.
// 64-bit grid entries are stored as two u32 words, low word first (element 0 in the lowest byte).
",
        );
        table(&mut s, "IQ2XXS_GRID", "u32", split(&IQ2XXS_GRID[..]), 8);
        table(&mut s, "IQ2XS_GRID", "u32", split(&IQ2XS_GRID[..]), 8);
        table(&mut s, "IQ2S_GRID", "u32", split(&IQ2S_GRID[..]), 8);
        table(&mut s, "IQ3XXS_GRID", "u32", IQ3XXS_GRID.iter().map(|&w| hex(w)).collect(), 8);
        table(&mut s, "IQ3S_GRID", "u32", IQ3S_GRID.iter().map(|&w| hex(w)).collect(), 8);
        table(&mut s, "IQ1S_GRID", "u32", split(&IQ1S_GRID[..]), 8);
        table(&mut s, "KSIGNS_IQ2XS", "u32", KSIGNS_IQ2XS.iter().map(|v| format!("{v}u")).collect(), 16);
        table(&mut s, "KVALUES_IQ4NL", "f32", KVALUES_IQ4NL.iter().map(|v| format!("{v}.0")).collect(), 16);
        s
    }

    #[test]
    fn iq_tables_match_the_engine() {
        let want = iq_tables_wgsl();
        if std::env::var_os("WEFT_WRITE_IQ_TABLES").is_some() {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend/webgpu/shaders/iq_tables.wgsl");
            std::fs::write(&path, &want).expect("write iq_tables.wgsl");
        }
        let got = shader("iq_tables").expect("iq_tables is listed").source;
        assert!(got == want, "iq_tables.wgsl differs from the engine's tables: rerun with WEFT_WRITE_IQ_TABLES=1");
    }

    #[test]
    fn every_flag_has_a_section() {
        let lib = shader("dequant").expect("dequant is listed").source;
        let mut n = 0;
        for ty in qt_types() {
            let flag = qt_flag(ty).expect("flag");
            assert_eq!(lib.matches(&format!("#ifdef {flag}\n")).count(), 1, "{flag}");
            n += 1;
        }
        // 21 quantized formats and f32, f16, bf16.
        assert_eq!(n, 24);
        assert_eq!(qt_flag(Type::Q8_1), None);
        assert_eq!(qt_flag(Type::Q8_K), None);
        assert_eq!(qt_flag(Type::I32), None);
    }
}
