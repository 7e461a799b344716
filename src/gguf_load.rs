//! Gguf's asynchronous side, as async Jobs (task.rs) on libuv's pool: openAsync parses a
//! file off the event loop, loadWeights maps or uploads a model's weights into a backend and
//! reports progress, while the event loop keeps running. Like every async method they never
//! throw: a bad argument rejects the Promise.

use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, JsObjectValue, Object, Unknown};
use napi::{Env, ValueType};
use weft::gguf::{load_weights, GgufFile, LoadOptions, LoadedWeights};

use crate::args::{boolean, present};
use crate::backend::{Backend, BackendBuffer};
use crate::context::Context;
use crate::error::{invalid, IntoJs, Result};
use crate::gguf::Gguf;
use crate::task::{class_arg, promise, Job, Promised};
use crate::watch::{progress_fn, report, ProgressFn};

// Declared for index.d.ts only: loadWeights reads the object field by field.
/// Options of Gguf.loadWeights.
#[napi(object, object_from_js = false, object_to_js = false)]
#[allow(dead_code)]
pub struct LoadWeightsOptions {
    /// Where the backend computes on host memory (CPU), bind the tensors in place in a
    /// private map of the file instead of copying them (llama.cpp's use_mmap). Default true.
    pub mmap: Option<bool>,
    /// With mmap, read every page in during the load rather than on first use. Default true.
    pub prefetch: Option<bool>,
}

/// Gguf.openAsync(path).
pub struct OpenJob {
    path: String,
}

impl Job for OpenJob {
    type Output = GgufFile;
    type JsValue = Gguf;
    const WHAT: &'static str = "Gguf.openAsync";

    fn run(&mut self) -> weft::Result<GgufFile> {
        GgufFile::open(&self.path)
    }

    fn to_js(&mut self, _env: &Env, file: GgufFile) -> napi::Result<Gguf> {
        Ok(Gguf::from_file(file))
    }
}

/// gguf.loadWeights(ctx, backend, options, onProgress).
pub struct LoadJob {
    file: Arc<GgufFile>,
    tensors: Vec<weft::Tensor>,
    backend: Arc<dyn weft::backend::Backend>,
    options: LoadOptions,
    progress: Option<ProgressFn>,
}

impl Job for LoadJob {
    type Output = LoadedWeights;
    type JsValue = Option<BackendBuffer>;
    const WHAT: &'static str = "Gguf.loadWeights";

    fn run(&mut self) -> weft::Result<LoadedWeights> {
        let progress = &self.progress;
        // A throw in onProgress is dropped: the load goes on (models/llama reports its own).
        let mut on_progress = |done: usize, total: usize| {
            if let Some(p) = progress {
                report(p, done, total, done == total, drop);
            }
        };
        load_weights(&self.file, &self.tensors, self.backend.as_ref(), self.options, &mut on_progress)
    }

    fn to_js(&mut self, env: &Env, loaded: LoadedWeights) -> napi::Result<Option<BackendBuffer>> {
        if loaded.buffers.is_empty() {
            return Ok(None);
        }
        // A mapped file's pages are the OS's to page in and out, as Gguf.open's map: only
        // uploaded copies are memory this object owns.
        Ok(Some(if loaded.mapped {
            BackendBuffer::borrowing(loaded.buffers)
        } else {
            BackendBuffer::owning(env, loaded.buffers)
        }))
    }
}

/// An optional boolean field of the options object.
fn flag(options: &Object, name: &str) -> Result<Option<bool>> {
    let v: Unknown = options.get_named_property(name).js()?;
    present(Some(v))?.map(|v| boolean(&format!("loadWeights: options.{name}"), &v)).transpose()
}

fn load_options(options: Option<Unknown>) -> Result<LoadOptions> {
    let defaults = LoadOptions::default();
    let Some(options) = present(options)? else { return Ok(defaults) };
    if options.get_type().js()? != ValueType::Object {
        return Err(invalid("loadWeights: options must be an object ({ mmap?, prefetch? })"));
    }
    // SAFETY: the type was just checked.
    let options: Object = unsafe { options.cast() }.js()?;
    Ok(LoadOptions {
        mmap: flag(&options, "mmap")?.unwrap_or(defaults.mmap),
        prefetch: flag(&options, "prefetch")?.unwrap_or(defaults.prefetch),
    })
}

fn progress(on_progress: Option<Unknown>) -> Result<Option<ProgressFn>> {
    let Some(f) = present(on_progress)? else { return Ok(None) };
    if f.get_type().js()? != ValueType::Function {
        return Err(invalid("loadWeights: onProgress must be a function (done, total) => void"));
    }
    Ok(Some(progress_fn(f)?))
}

#[napi]
impl Gguf {
    /// Gguf.open off the event loop: parsing a large vocabulary takes a while.
    #[napi(catch_unwind, ts_args_type = "path: string", ts_return_type = "Promise<Gguf>")]
    pub fn open_async(path: Unknown) -> AsyncTask<Promised<OpenJob>> {
        promise(|| {
            if path.get_type().js()? != ValueType::String {
                return Err(invalid("Gguf.openAsync: path must be a string"));
            }
            // SAFETY: the type was just checked.
            Ok(OpenJob { path: unsafe { path.cast::<String>() }.js()? })
        })
    }

    /// Load the data of every unallocated tensor of `ctx` (createTensors made them; matched
    /// by name) into `backend`, off the event loop (llama.cpp's load_all_data). On a host
    /// backend with `mmap` the tensors are bound in place in a private (copy-on-write) map
    /// of the file: no copy is made and the file is never written. Otherwise they are
    /// allocated on the backend and uploaded. `onProgress(done, total)` reports bytes, the last
    /// before the Promise settles (a throw in it is dropped: the load goes on). Resolves to the weights'
    /// buffer (named 'CPU_Mapped' when mapped), or null when there was nothing to load. The
    /// tensors cannot be read or written until it settles. Every failure rejects.
    #[napi(
        catch_unwind,
        ts_args_type = "ctx: Context, backend: Backend, options?: LoadWeightsOptions | undefined | null, onProgress?: ((done: number, total: number) => void) | undefined | null",
        ts_return_type = "Promise<BackendBuffer | null>"
    )]
    pub fn load_weights(
        &self,
        env: Env,
        ctx: Unknown,
        backend: Unknown,
        options: Option<Unknown>,
        on_progress: Option<Unknown>,
    ) -> AsyncTask<Promised<LoadJob>> {
        promise(|| {
            let file = self.get_file()?.clone();
            let tensors = class_arg::<Context>(&env, &ctx, "loadWeights: ctx")?.ctx()?.tensors();
            let backend = class_arg::<Backend>(&env, &backend, "loadWeights: backend")?.get()?.clone();
            let options = load_options(options)?;
            let progress = progress(on_progress)?;
            Ok(LoadJob { file, tensors, backend, options, progress })
        })
    }
}
