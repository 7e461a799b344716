//! A list of dispatches (one per graph node) into one command encoder and one submission:
//! all params blocks packed into one uniform buffer, one compute pass per node (pass
//! boundaries order each node's writes before the next node's reads).

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::ops::Dispatch;
use crate::{Error, Result};

/// Encode the dispatches and submit them; with `wait`, return once the device ran them.
pub fn run(ctx: &GpuContext, what: &str, dispatches: &[Dispatch], wait: bool) -> Result<()> {
    if dispatches.is_empty() {
        return Ok(());
    }
    let pipelines = dispatches.iter().map(|d| ctx.pipeline(&d.key)).collect::<Result<Vec<_>>>()?;

    // Each block starts at a multiple of the uniform offset alignment.
    let stride = ctx.limits.min_uniform_buffer_offset_alignment.max(16) as usize;
    let mut bytes: Vec<u8> = Vec::new();
    let mut offsets = Vec::with_capacity(dispatches.len());
    for d in dispatches {
        let size = d.params.len() * 4;
        if size as u64 > ctx.limits.max_uniform_buffer_binding_size {
            return Err(Error::backend(format!(
                "WebGPU: {}: params block of {size} bytes is too large",
                d.key.label()
            )));
        }
        bytes.resize(bytes.len().next_multiple_of(stride), 0);
        offsets.push((bytes.len() as u64, size as u64));
        bytes.extend(d.params.iter().flat_map(|w| w.to_le_bytes()));
    }

    ctx.submit(what, wait, |encoder| {
        let params = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("weft params"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        for ((d, pipeline), &(offset, size)) in dispatches.iter().zip(&pipelines).zip(&offsets) {
            let mut entries = vec![entry(0, &params, offset, size)];
            entries.extend(d.bindings.iter().map(|b| entry(b.binding, &b.buffer, b.offset, b.size)));
            let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
            let mut pass =
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            let [x, y, z] = d.groups;
            pass.dispatch_workgroups(x, y, z);
        }
    })
}

fn entry(binding: u32, buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset,
            size: wgpu::BufferSize::new(size),
        }),
    }
}
