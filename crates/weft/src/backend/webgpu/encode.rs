//! A list of dispatches (one per graph node) into one command encoder and one submission:
//! all params blocks packed into one uniform buffer, one compute pass per node (pass
//! boundaries order each node's writes before the next node's reads).

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::ops::quant::{uses_iq_grids, uses_iq_search, IQ_GRIDS_BINDING, IQ_SEARCH_BINDING};
use super::ops::Dispatch;
use crate::{Error, Result};

/// Encode the dispatches and submit them; with `wait`, return once the device ran them,
/// with the seconds the device spent on them: from timestamps written at the start of the
/// first pass and the end of the last where the device has TIMESTAMP_QUERY, else the wall
/// time from submission to completion. None without `wait` or without dispatches.
pub fn run(ctx: &GpuContext, what: &str, dispatches: &[Dispatch], wait: bool) -> Result<Option<f64>> {
    if dispatches.is_empty() {
        return Ok(None);
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

    let stamps = if wait && ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        Some(Stamps::new(ctx, what)?)
    } else {
        None
    };
    let last = dispatches.len() - 1;
    let started = std::time::Instant::now();
    // With timestamps, their map's wait is the submission's wait (one fence wait, not two).
    ctx.submit(what, wait && stamps.is_none(), |encoder| {
        let params = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("weft params"),
            contents: &bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        for (i, ((d, pipeline), &(offset, size))) in dispatches.iter().zip(&pipelines).zip(&offsets).enumerate() {
            let mut entries = vec![entry(0, &params, offset, size)];
            entries.extend(d.bindings.iter().map(|b| entry(b.binding, &b.buffer, b.offset, b.size)));
            if uses_iq_grids(&d.key) {
                entries.push(entry(IQ_GRIDS_BINDING, &ctx.iq_grids, 0, ctx.iq_grids.size()));
            }
            if uses_iq_search(&d.key) {
                let tables = ctx.iq_search();
                entries.push(entry(IQ_SEARCH_BINDING, tables, 0, tables.size()));
            }
            let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
            let timestamp_writes =
                stamps.as_ref().filter(|_| i == 0 || i == last).map(|st| wgpu::ComputePassTimestampWrites {
                    query_set: &st.set,
                    beginning_of_pass_write_index: (i == 0).then_some(0),
                    end_of_pass_write_index: (i == last).then_some(1),
                });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            let [x, y, z] = d.groups;
            pass.dispatch_workgroups(x, y, z);
        }
        if let Some(st) = &stamps {
            encoder.resolve_query_set(&st.set, 0..2, &st.resolve, 0);
            encoder.copy_buffer_to_buffer(&st.resolve, 0, &st.read, 0, 16);
        }
    })?;
    if !wait {
        return Ok(None);
    }
    let stamped = match &stamps {
        Some(st) => st.seconds(ctx, what)?,
        None => None,
    };
    Ok(Some(stamped.unwrap_or_else(|| started.elapsed().as_secs_f64())))
}

/// Two timestamps (start of the first pass, end of the last) and the buffers that bring
/// them back.
struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    read: wgpu::Buffer,
}

impl Stamps {
    fn new(ctx: &GpuContext, what: &str) -> Result<Stamps> {
        ctx.scoped(what, || {
            let buffer = |label: &'static str, usage: wgpu::BufferUsages| {
                ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: 16,
                    usage,
                    mapped_at_creation: false,
                })
            };
            Stamps {
                set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("weft timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2,
                }),
                resolve: buffer(
                    "weft timestamps resolve",
                    wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                ),
                read: buffer("weft timestamps read", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            }
        })
    }

    /// The seconds between the two timestamps, once the submission has completed; None
    /// when the device wrote nonsense (an end before the start).
    fn seconds(&self, ctx: &GpuContext, what: &str) -> Result<Option<f64>> {
        let (tx, rx) = std::sync::mpsc::channel();
        ctx.scoped(what, || self.read.map_async(wgpu::MapMode::Read, .., move |r| drop(tx.send(r))))?;
        ctx.wait(what, None)?;
        rx.recv()
            .map_err(|_| Error::backend(format!("{what}: the timestamp map callback never ran")))?
            .map_err(|e| Error::backend(format!("{what}: mapping timestamps failed: {e}")))?;
        let ticks = {
            let view =
                self.read.get_mapped_range(..).map_err(|e| Error::backend(format!("{what}: timestamp range: {e}")))?;
            let word = |i: usize| u64::from_le_bytes(view[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
            (word(0), word(1))
        };
        self.read.unmap();
        let period_ns = ctx.queue.get_timestamp_period() as f64;
        Ok((ticks.1 > ticks.0 && period_ns > 0.0).then(|| (ticks.1 - ticks.0) as f64 * period_ns * 1e-9))
    }
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
