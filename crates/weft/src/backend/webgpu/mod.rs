//! The WebGPU backend (wgpu: Vulkan, Metal, DX12, GL; lavapipe on machines without a
//! GPU). Every adapter that can run compute shaders is a device, WebGPU0, WebGPU1, ...;
//! with none (or any failure while looking) the registry simply lists no devices.
//!
//! context.rs   the wgpu device + queue of one adapter, error scopes, waiting
//! device.rs    discovery and the `Device`
//! buffer.rs    storage buffers (the `BufferType` and `Buffer`)
//! backend.rs   the `Backend`: graph -> dispatches -> one submission (encode.rs)
//! event.rs     events: submission indices on the device's queue
//! dispatch.rs  the one match over ops; ops/ the kernels; shaders/ their WGSL
//! pipeline.rs  the pipeline cache keyed by (shader, entry, defines); shaders.rs the
//!              shader table and the define preprocessor

mod backend;
mod buffer;
mod context;
mod device;
mod dispatch;
mod encode;
mod event;
mod ops;
mod pipeline;
mod shaders;
#[cfg(test)]
mod validate;

use std::sync::Arc;

pub use backend::WebGpuBackend;
pub use buffer::{WebGpuBuffer, WebGpuBufferType};
pub use device::WebGpuDevice;

use crate::backend::{Device, Registry};

pub struct WebGpuRegistry {
    devices: Vec<Arc<dyn Device>>,
}

impl WebGpuRegistry {
    /// Look for adapters. Never panics: a driver that does is treated as no adapter.
    pub fn discover() -> WebGpuRegistry {
        let found = std::panic::catch_unwind(device::discover).unwrap_or_default();
        WebGpuRegistry { devices: found.into_iter().map(|d| Arc::new(d) as Arc<dyn Device>).collect() }
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
