//! The WGSL sources, one file each under `shaders/`, and the small preprocessor that makes
//! variants of them from a map of defines (web-rwkv's idea): `{{NAME}}` is replaced by the
//! define's value; `#ifdef NAME` / `#ifndef NAME` / `#else` / `#endif` keep or drop lines;
//! `#include "name"` pastes another file of the table. Directives sit alone on their line.

use crate::{Error, Result};

/// A shader file, named as in pipeline keys.
pub struct Shader {
    pub name: &'static str,
    pub source: &'static str,
}

macro_rules! shaders {
    ($($name:literal),* $(,)?) => {
        /// Every file under `shaders/`; a test checks the directory has no others.
        pub const SHADERS: &[Shader] = &[
            $(Shader { name: $name, source: include_str!(concat!("shaders/", $name, ".wgsl")) },)*
        ];
    };
}

shaders![
    "add_rel_pos",
    "any_row",
    "argmax",
    "argsort",
    "common",
    "conv_transpose",
    "count_equal",
    "cpy",
    "cross_entropy_loss",
    "cross_entropy_loss_back",
    "dequant",
    "elementwise",
    "flash_attn",
    "generate",
    "get_rows",
    "get_rows_back",
    "group_norm",
    "im2col",
    "im2col_back",
    "iq_grids",
    "iq_tables",
    "load_a",
    "mm_common",
    "mul_mat",
    "mul_mat_id",
    "mul_mat_vec",
    "mul_mm",
    "norm",
    "opt_step_adamw",
    "out_prod",
    "place",
    "pool",
    "pool_back",
    "quantize",
    "quantize_iq",
    "quantize_k",
    "reduce",
    "rms_norm_back",
    "rope",
    "rwkv_wkv",
    "set",
    "soft_max",
    "soft_max_back",
    "ssm_conv",
    "ssm_scan",
    "sum",
    "sum_rows",
];

pub fn shader(name: &str) -> Result<&'static Shader> {
    SHADERS.iter().find(|s| s.name == name).ok_or_else(|| Error::backend(format!("WebGPU: no shader named '{name}'")))
}

/// The source of `name` with includes pasted, conditionals resolved and `{{X}}` replaced.
pub fn preprocess(name: &str, defines: &[(&str, String)]) -> Result<String> {
    let mut out = String::new();
    expand(name, defines, &mut out, 0)?;
    substitute(name, &out, defines)
}

/// `WEFT_WEBGPU_SHADER_DIR`: read every shader from `<dir>/<name>.wgsl` instead of the
/// built-in copy, so a changed shader runs without a rebuild (scripts/broken-kernels.ts
/// breaks kernels on purpose this way). Read when a pipeline is first made.
fn override_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("WEFT_WEBGPU_SHADER_DIR").filter(|d| !d.is_empty()).map(Into::into)
}

fn expand(name: &str, defines: &[(&str, String)], out: &mut String, depth: usize) -> Result<()> {
    let builtin = shader(name)?.source;
    let Some(dir) = override_dir() else {
        return expand_source(name, builtin, defines, out, depth);
    };
    let path = dir.join(format!("{name}.wgsl"));
    let source = std::fs::read_to_string(&path)
        .map_err(|e| Error::backend(format!("WebGPU: WEFT_WEBGPU_SHADER_DIR: {}: {e}", path.display())))?;
    expand_source(name, &source, defines, out, depth)
}

fn expand_source(name: &str, source: &str, defines: &[(&str, String)], out: &mut String, depth: usize) -> Result<()> {
    let err = |line: usize, msg: &str| Error::backend(format!("WebGPU: shader '{name}' line {line}: {msg}"));
    if depth > 8 {
        return Err(err(0, "includes nest too deeply"));
    }
    let defined = |k: &str| defines.iter().any(|(d, _)| *d == k);
    // One entry per open #ifdef: (this branch is kept, the enclosing block is kept).
    let mut stack: Vec<(bool, bool)> = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let t = line.trim();
        let keep = stack.last().is_none_or(|&(on, _)| on);
        if let Some(k) = t.strip_prefix("#ifdef ") {
            stack.push((keep && defined(k.trim()), keep));
        } else if let Some(k) = t.strip_prefix("#ifndef ") {
            stack.push((keep && !defined(k.trim()), keep));
        } else if t == "#else" {
            let (on, outer) = stack.pop().ok_or_else(|| err(i + 1, "#else without #ifdef"))?;
            stack.push((outer && !on, outer));
        } else if t == "#endif" {
            stack.pop().ok_or_else(|| err(i + 1, "#endif without #ifdef"))?;
        } else if let Some(inc) = t.strip_prefix("#include ") {
            if keep {
                expand(inc.trim().trim_matches('"'), defines, out, depth + 1)?;
            }
        } else if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !stack.is_empty() {
        return Err(err(0, "#ifdef without #endif"));
    }
    Ok(())
}

fn substitute(name: &str, src: &str, defines: &[(&str, String)]) -> Result<String> {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .ok_or_else(|| Error::backend(format!("WebGPU: shader '{name}': unclosed '{{{{'")))?;
        let key = rest[start + 2..start + end].trim();
        let value = defines
            .iter()
            .find(|(k, _)| *k == key)
            .ok_or_else(|| Error::backend(format!("WebGPU: shader '{name}' needs define '{key}'")))?;
        out.push_str(&value.1);
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str, defines: &[(&str, String)]) -> Result<String> {
        let mut s = String::new();
        expand_source("test", src, defines, &mut s, 0)?;
        substitute("test", &s, defines)
    }

    #[test]
    fn conditionals_and_placeholders() {
        let src = "a\n#ifdef X\nb {{X}}\n#ifndef Y\nc\n#else\nd\n#endif\n#else\ne\n#endif\nf\n";
        assert_eq!(run(src, &[("X", "7".to_string())]).unwrap(), "a\nb 7\nc\nf\n");
        assert_eq!(run(src, &[("X", "7".to_string()), ("Y", String::new())]).unwrap(), "a\nb 7\nd\nf\n");
        assert_eq!(run(src, &[]).unwrap(), "a\ne\nf\n");
    }

    #[test]
    fn malformed_sources_are_errors() {
        assert!(run("x {{N}}", &[]).is_err());
        assert!(run("x {{N", &[("N", "1".to_string())]).is_err());
        assert!(run("#ifdef A\nx", &[]).is_err());
        assert!(run("#endif", &[]).is_err());
        assert!(preprocess("no-such-shader", &[]).is_err());
    }
}
