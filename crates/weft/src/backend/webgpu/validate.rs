//! Every WGSL file and every variant the kernels compile, parsed and validated with naga
//! (the compiler wgpu itself uses), so shader errors show without any GPU.

use std::collections::BTreeSet;

use super::dispatch::all_variants;
use super::shaders::{preprocess, SHADERS};

fn validate(label: &str, source: &str) -> wgpu::naga::Module {
    use wgpu::naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = wgpu::naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{label} does not parse:\n{}", e.emit_to_string(source)));
    Validator::new(ValidationFlags::all(), Capabilities::SHADER_FLOAT16 | Capabilities::SUBGROUP)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{label} does not validate:\n{}", e.emit_to_string(source)));
    module
}

#[test]
fn every_variant_validates() {
    let variants = all_variants();
    assert!(variants.len() >= 10);
    for key in &variants {
        let source = key.source().unwrap_or_else(|e| panic!("{}: {e}", key.label()));
        let module = validate(&key.label(), &source);
        assert!(
            module.entry_points.iter().any(|e| e.name == key.entry),
            "{}: no entry point '{}'",
            key.label(),
            key.entry
        );
    }
}

#[test]
fn every_shader_file_is_listed_used_and_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/backend/webgpu/shaders");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("shaders dir")
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = SHADERS.iter().map(|s| format!("{}.wgsl", s.name)).collect();
    assert_eq!(on_disk, listed, "shaders/ and the SHADERS table differ");

    let mains: BTreeSet<&str> = all_variants().iter().map(|k| k.shader).collect();
    for s in SHADERS {
        if mains.contains(s.name) {
            continue;
        }
        // A library file: some shader includes it, and it validates on its own.
        let include = format!("#include \"{}\"", s.name);
        assert!(SHADERS.iter().any(|o| o.source.contains(&include)), "{}.wgsl is never used", s.name);
        // quantize_k.wgsl and quantize_iq.wgsl are part of quantize.wgsl (its block buffers
        // and byte helpers): every_variant_validates checks them there, in every type they
        // quantize.
        if s.name == "quantize_k" || s.name == "quantize_iq" {
            continue;
        }
        // Libraries reading a tensor of some type (dequant, any_row) get one: f32.
        let defines = [("WG_SIZE", "64".to_string()), ("QT_F32", String::new())];
        let mut source = preprocess(s.name, &defines).expect("preprocess");
        // dequant.wgsl builds on common.wgsl and on the `q_word` its includer defines.
        if source.contains("q_word(") && !source.lines().any(|l| l.trim_start().starts_with("fn q_word")) {
            let common = preprocess("common", &[]).expect("common");
            source = format!("{common}\nfn q_word(i: u32) -> u32 {{ return i; }}\n{source}");
        }
        validate(s.name, &source);
    }
}
