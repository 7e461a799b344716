//! Gguf's asynchronous side, on napi's tokio runtime (blocking work in spawn_blocking):
//! openAsync parses a file off the event loop, loadWeights maps or uploads a model's
//! weights into a backend and reports progress, while the event loop keeps running.

use napi::bindgen_prelude::{spawn_blocking, FnArgs, PromiseRaw};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use weft::gguf::{load_weights, GgufFile, LoadOptions};

use crate::backend::{Backend, BackendBuffer};
use crate::context::Context;
use crate::error::Result;
use crate::gguf::Gguf;
use crate::task::{catch, reject};

#[napi(object)]
pub struct LoadWeightsOptions {
    /// Where the backend computes on host memory (CPU), bind the tensors in place in a
    /// private map of the file instead of copying them (llama.cpp's use_mmap). Default true.
    pub mmap: Option<bool>,
    /// With mmap, read every page in during the load rather than on first use. Default true.
    pub prefetch: Option<bool>,
}

/// onProgress(doneBytes, totalBytes), called on the JS thread (FnArgs spreads the pair into
/// two arguments).
type Progress = ThreadsafeFunction<FnArgs<(f64, f64)>, (), FnArgs<(f64, f64)>, Status, false>;

/// Run `work` on tokio's blocking pool; a panic or a lost task becomes an engine error.
async fn blocking<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> weft::Result<T> + Send + 'static,
) -> napi::Result<weft::Result<T>> {
    Ok(spawn_blocking(move || catch(what, work))
        .await
        .unwrap_or_else(|e| Err(weft::Error::backend(format!("{what}: the task failed: {e}")))))
}

#[napi]
impl Gguf {
    /// Gguf.open off the event loop: parsing a large vocabulary takes a while.
    #[napi(catch_unwind, ts_return_type = "Promise<Gguf>")]
    pub fn open_async(env: &Env, path: String) -> Result<PromiseRaw<'_, Gguf>> {
        let fut = blocking("Gguf.openAsync", move || GgufFile::open(&path));
        env.spawn_future_with_callback(fut, |env, r| r.map(Gguf::from_file).map_err(|e| reject(env, e)))
            .map_err(crate::error::napi_err)
    }

    /// Load the data of every unallocated tensor of `ctx` (createTensors made them; matched
    /// by name) into `backend`, off the event loop (llama.cpp's load_all_data). On a host
    /// backend with `mmap` the tensors are bound in place in a private (copy-on-write) map
    /// of the file: no copy is made and the file is never written. Otherwise they are
    /// allocated on the backend and uploaded. `onProgress(done, total)` reports bytes.
    /// Resolves to the weights' buffer (named 'CPU_Mapped' when mapped), or null when there
    /// was nothing to load. The tensors cannot be read or written until it settles.
    #[napi(
        catch_unwind,
        ts_args_type = "ctx: Context, backend: Backend, options?: LoadWeightsOptions | undefined | null, onProgress?: ((done: number, total: number) => void) | undefined | null",
        ts_return_type = "Promise<BackendBuffer | null>"
    )]
    pub fn load_weights<'e>(
        &self,
        env: &'e Env,
        ctx: &Context,
        backend: &Backend,
        options: Option<LoadWeightsOptions>,
        on_progress: Option<Progress>,
    ) -> Result<PromiseRaw<'e, Option<BackendBuffer>>> {
        let file = self.get_file()?.clone();
        let tensors = ctx.ctx()?.tensors();
        let backend = backend.get()?.clone();
        let options = options.unwrap_or(LoadWeightsOptions { mmap: None, prefetch: None });
        let defaults = LoadOptions::default();
        let options = LoadOptions {
            mmap: options.mmap.unwrap_or(defaults.mmap),
            prefetch: options.prefetch.unwrap_or(defaults.prefetch),
        };
        let fut = blocking("Gguf.loadWeights", move || {
            let mut report = |done: usize, total: usize| {
                if let Some(p) = &on_progress {
                    p.call((done as f64, total as f64).into(), ThreadsafeFunctionCallMode::NonBlocking);
                }
            };
            load_weights(&file, &tensors, backend.as_ref(), options, &mut report)
        });
        env.spawn_future_with_callback(fut, |env, r| {
            let loaded = r.map_err(|e| reject(env, e))?;
            Ok((!loaded.buffers.is_empty()).then(|| BackendBuffer::from_buffers(loaded.buffers)))
        })
        .map_err(crate::error::napi_err)
    }
}
