//! What kernels reading quantized (or f16/bf16) tensors through `shaders/dequant.wgsl` share:
//! the `QT_<TYPE>` flag that picks a type's section of that library, and the binding of a
//! tensor addressed in bytes (quantized rows are runs of blocks, whose strides are bytes,
//! not whole elements: see [`qarg`]).
//!
//! The I-quants' grids and sign table are one storage buffer per device ([`iq_grid_words`],
//! read through `shaders/iq_grids.wgsl`), taken from the engine's own tables
//! (`types/quant/grids.rs`, `grid_iq1s.rs`); `shaders/iq_tables.wgsl` keeps the small
//! iq4_nl value table as a WGSL constant, generated from the engine's and checked below.

use super::{bind_range, layout_of, Binding};
use crate::backend::webgpu::context::GpuContext;
use crate::backend::webgpu::pipeline::PipelineKey;
use crate::tensor::{Tensor, MAX_DIMS};
use crate::types::quant::grid_iq1s::IQ1S_GRID;
use crate::types::quant::grids::{IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS};
use crate::types::quant::iq_tables;
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

/// The types whose dequant.wgsl section reads iq_grids.wgsl's buffer.
const GRID_TYPES: [Type; 7] =
    [Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S, Type::IQ1_M];

/// The `@binding` of iq_grids.wgsl's buffer: above every binding a kernel declares.
pub const IQ_GRIDS_BINDING: u32 = 15;

/// iq_grids.wgsl's tables in buffer order, named as its `<NAME>_AT` offsets; 64-bit grid
/// entries as two words, low word first.
fn iq_grid_tables() -> [(&'static str, Vec<u32>); 7] {
    let split = |g: &[u64]| g.iter().flat_map(|&v| [v as u32, (v >> 32) as u32]).collect::<Vec<u32>>();
    [
        ("IQ2XXS_GRID", split(&IQ2XXS_GRID[..])),
        ("IQ2XS_GRID", split(&IQ2XS_GRID[..])),
        ("IQ2S_GRID", split(&IQ2S_GRID[..])),
        ("IQ3XXS_GRID", IQ3XXS_GRID.to_vec()),
        ("IQ3S_GRID", IQ3S_GRID.to_vec()),
        ("IQ1S_GRID", split(&IQ1S_GRID[..])),
        ("KSIGNS_IQ2XS", KSIGNS_IQ2XS.iter().map(|&v| v as u32).collect()),
    ]
}

/// The contents of the iq_grids buffer (34 KiB), uploaded once per device.
pub fn iq_grid_words() -> Vec<u32> {
    iq_grid_tables().into_iter().flat_map(|(_, words)| words).collect()
}

/// Whether the pipeline `key` reads the iq_grids buffer: it decodes a grid I-quant.
pub fn uses_iq_grids(key: &PipelineKey) -> bool {
    key.defines.iter().any(|(name, _)| GRID_TYPES.iter().any(|&t| qt_flag(t) == Some(*name)))
}

/// The `@binding` of the grid quantizers' search tables (quantize_iq.wgsl).
pub const IQ_SEARCH_BINDING: u32 = 14;

/// The contents of the search buffer, built on a device's first CPY into a grid I-quant:
/// a header of three word offsets per table (packed grid levels, map, neighbour lists, see
/// `GridTables::search_words`), then the tables, in quantize_iq.wgsl's `TBL_*` order.
pub fn iq_search_words() -> Vec<u32> {
    let tables = [
        iq_tables::iq2xxs().search_words(),
        iq_tables::iq2xs().search_words(),
        iq_tables::iq2s().search_words(),
        iq_tables::iq1().search_words(),
        iq_tables::iq3xxs().search_words(),
        iq_tables::iq3s().search_words(),
    ];
    let mut header = Vec::with_capacity(3 * tables.len());
    let mut body = Vec::new();
    let at = 3 * tables.len();
    for part in tables.iter().flatten() {
        header.push((at + body.len()) as u32);
        body.extend_from_slice(part);
    }
    header.extend(body);
    header
}

/// Whether the pipeline `key` reads the search buffer: it quantizes into a grid I-quant.
pub fn uses_iq_search(key: &PipelineKey) -> bool {
    key.defines.iter().any(|(name, _)| *name == "QZ_GRID")
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
    use crate::types::quant::grids::KVALUES_IQ4NL;

    /// iq_tables.wgsl as the engine's table gives it.
    fn iq_tables_wgsl() -> String {
        let values: Vec<String> = KVALUES_IQ4NL.iter().map(|v| format!("{v}.0")).collect();
        format!(
            "// The iq4_nl values of ggml-common.h as a WGSL constant, included by dequant.wgsl's iq4_nl and
// iq4_xs sections and by quantize.wgsl. GENERATED from the engine's table
// (crates/weft/src/types/quant/grids.rs); the test ops::quant::tests::iq_tables_match_the_engine
// fails when they differ and rewrites this file when run with WEFT_WRITE_IQ_TABLES=1. Do not
// edit by hand. (The grid I-quants' tables are a storage buffer: iq_grids.wgsl.)

const KVALUES_IQ4NL = array<f32, 16>(
    {},
);
",
            values.join(", ")
        )
    }

    #[test]
    fn iq_grids_offsets_match_the_buffer() {
        let src = shader("iq_grids").expect("iq_grids is listed").source;
        assert!(src.contains(&format!("@binding({IQ_GRIDS_BINDING}) var<storage, read> iq_grids")), "binding");
        let mut at = 0;
        for (name, words) in iq_grid_tables() {
            let line = format!("const {name}_AT: u32 = {at}u;");
            assert!(src.contains(&line), "iq_grids.wgsl lacks `{line}`");
            at += words.len();
        }
        assert_eq!(iq_grid_words().len(), at);
        // A grid type's variant binds the buffer; another type's does not.
        let key = |t: Type| PipelineKey::new("get_rows", "main").flag(qt_flag(t).expect("flag"));
        assert!(GRID_TYPES.iter().all(|&t| uses_iq_grids(&key(t))));
        assert!(!uses_iq_grids(&key(Type::IQ4_XS)) && !uses_iq_grids(&key(Type::Q4_K)));
    }

    /// quantize_iq.wgsl's reading of the search buffer (header, then per table the packed
    /// grid levels, the map and the neighbour lists) gives the engine's lookups.
    #[test]
    fn iq_search_words_read_back_as_the_engine_tables() {
        use iq_tables::Lookup;
        let words = iq_search_words();
        let t = iq_tables::iq3s();
        let (points, map, nbs) = (words[15] as usize, words[16] as usize, words[17] as usize);
        assert!(words[..18].windows(2).all(|w| w[0] < w[1]) && words[17] < words.len() as u32);
        for u in [0usize, 1, 17, 1000, 4095] {
            let m = words[map + u] as i32;
            match t.lookup(u) {
                Lookup::OnGrid(i) => assert_eq!(m, i as i32, "u {u}"),
                Lookup::Neighbours(list) => {
                    let start = nbs + (-(m + 1)) as usize;
                    let n = words[start] as usize;
                    let got: Vec<u16> = words[start + 1..start + 1 + n].iter().map(|&j| j as u16).collect();
                    assert_eq!(got, list, "u {u}");
                }
            }
        }
        for j in [0usize, 100, 511] {
            let levels = t.levels(j);
            let packed = words[points + j];
            assert!(levels.iter().enumerate().all(|(i, &l)| (packed >> (3 * i)) & 7 == l as u32), "point {j}");
        }
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
