//! The WebGPU backend (wgpu). Placeholder registry until the backend lands: no devices.

use std::sync::Arc;

use crate::backend::{Device, Registry};

pub struct WebGpuRegistry {
    devices: Vec<Arc<dyn Device>>,
}

impl WebGpuRegistry {
    pub fn discover() -> WebGpuRegistry {
        WebGpuRegistry { devices: Vec::new() }
    }
}

impl Registry for WebGpuRegistry {
    fn name(&self) -> String {
        "WebGPU".into()
    }
    fn devices(&self) -> Vec<Arc<dyn Device>> {
        self.devices.clone()
    }
}
