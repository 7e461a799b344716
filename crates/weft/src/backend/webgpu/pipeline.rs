//! The one place compute pipelines are made, and the cache that keeps them: keyed by
//! (shader file, entry point, defines), so a variant is a key, not a hand-written map.

use std::collections::HashMap;
use std::sync::Mutex;

use super::context::GpuContext;
use super::shaders::preprocess;
use crate::Result;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PipelineKey {
    pub shader: &'static str,
    pub entry: &'static str,
    /// Sorted by name, so the same set of defines is the same key in any order.
    pub defines: Vec<(&'static str, String)>,
}

impl PipelineKey {
    pub fn new(shader: &'static str, entry: &'static str) -> PipelineKey {
        PipelineKey { shader, entry, defines: Vec::new() }
    }

    /// Add (or replace) a define; `{{name}}` in the source becomes `value`.
    pub fn define(mut self, name: &'static str, value: impl ToString) -> PipelineKey {
        let value = value.to_string();
        match self.defines.binary_search_by(|(k, _)| k.cmp(&name)) {
            Ok(i) => self.defines[i].1 = value,
            Err(i) => self.defines.insert(i, (name, value)),
        }
        self
    }

    /// A define used only by `#ifdef`.
    pub fn flag(self, name: &'static str) -> PipelineKey {
        self.define(name, "")
    }

    pub fn source(&self) -> Result<String> {
        preprocess(self.shader, &self.defines)
    }

    /// "soft_max:main[MASK_F16,WG_SIZE=256]", for labels and errors.
    pub fn label(&self) -> String {
        let defs: Vec<String> =
            self.defines.iter().map(|(k, v)| if v.is_empty() { k.to_string() } else { format!("{k}={v}") }).collect();
        format!("{}:{}[{}]", self.shader, self.entry, defs.join(","))
    }
}

#[derive(Default)]
pub struct PipelineCache {
    map: Mutex<HashMap<PipelineKey, wgpu::ComputePipeline>>,
}

impl GpuContext {
    /// The pipeline for `key`, compiled on first use. The cache lock is held while
    /// compiling so two threads never build the same pipeline twice.
    pub fn pipeline(&self, key: &PipelineKey) -> Result<wgpu::ComputePipeline> {
        let mut map = self.pipelines.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = map.get(key) {
            return Ok(p.clone());
        }
        let source = key.source()?;
        let label = key.label();
        let pipeline = self.scoped(&format!("compiling {label}"), || {
            let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&label),
                layout: None,
                module: &module,
                entry_point: Some(key.entry),
                compilation_options: Default::default(),
                cache: None,
            })
        })?;
        map.insert(key.clone(), pipeline.clone());
        Ok(pipeline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_are_order_independent() {
        let a = PipelineKey::new("binary", "main").define("OP", "+").flag("X");
        let b = PipelineKey::new("binary", "main").flag("X").define("OP", "+");
        assert_eq!(a, b);
        assert_eq!(a.label(), "binary:main[OP=+,X]");
        assert_ne!(a, PipelineKey::new("binary", "main").define("OP", "*").flag("X"));
    }
}
