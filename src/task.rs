//! Work that runs off the JS thread (napi AsyncTask on libuv's pool): graph compute, the
//! node-by-node backend comparison and tensor reads. An async method never throws: whatever
//! fails while its work is prepared on the JS thread (a disposed object, a busy buffer, a bad
//! argument or option) rejects its Promise just as a failure of the work itself does. The
//! buffers a job uses are marked in use from the call until the Promise settles.

use std::sync::Arc;

use napi::bindgen_prelude::{
    AsyncTask, ClassInstance, Float32Array, FromNapiValue, JsObjectValue, MaybeTypeTag, ToNapiValue, TypeName,
    Uint8Array, Unknown,
};
use napi::{Env, JsValue, Status, Task};
use weft::backend::{Backend, BusyGuard};

use crate::error::{invalid, panic_message, JsError, Result};
use crate::watch::ComputeWatch;

/// The work of one async method.
pub trait Job: Send + Sized + 'static {
    type Output: Send + 'static;
    type JsValue: ToNapiValue + TypeName;
    /// The method's name in messages ('compute').
    const WHAT: &'static str;
    /// The work, on libuv's pool.
    fn run(&mut self) -> weft::Result<Self::Output>;
    /// Its result as a JS value, back on the JS thread.
    fn to_js(&mut self, env: &Env, output: Self::Output) -> napi::Result<Self::JsValue>;
    /// The rejection for an engine error.
    fn rejection(&mut self, env: &Env, e: weft::Error) -> napi::Error {
        error_value(env, e.kind.code(), &e.message)
    }
    /// Release what the job holds in JS (listeners, references), on the JS thread, once its
    /// Promise settles. Dropping the job then releases its buffers.
    fn settle(&mut self, _env: &Env) {}
}

/// The Promise of an async method: its job, or the error that kept the job from being made.
pub struct Promised<J: Job> {
    job: Option<std::result::Result<J, JsError>>,
}

/// Run `prepare` now, on the JS thread, and return the Promise of the job it makes; an
/// error from `prepare` rejects that Promise.
pub fn promise<J: Job>(prepare: impl FnOnce() -> Result<J>) -> AsyncTask<Promised<J>> {
    AsyncTask::new(Promised { job: Some(prepare()) })
}

impl<J: Job> Promised<J> {
    fn settle(&mut self, env: &Env) {
        if let Some(Ok(mut job)) = self.job.take() {
            job.settle(env);
        }
    }
}

impl<J: Job> Task for Promised<J> {
    /// None when there was no job to run.
    type Output = Option<weft::Result<J::Output>>;
    type JsValue = J::JsValue;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(match &mut self.job {
            Some(Ok(job)) => Some(catch(J::WHAT, || job.run())),
            _ => None,
        })
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<J::JsValue> {
        let result = match (&mut self.job, output) {
            (Some(Ok(job)), Some(Ok(out))) => job.to_js(&env, out),
            (Some(Ok(job)), Some(Err(e))) => Err(job.rejection(&env, e)),
            (Some(Err(e)), _) => Err(error_value(&env, &e.status, &e.reason)),
            _ => Err(error_value(&env, "WEFT_INTERNAL", &format!("{}{}: no job", napi::INTERNAL_PREFIX, J::WHAT))),
        };
        self.settle(&env);
        result
    }

    fn reject(&mut self, env: Env, err: napi::Error) -> napi::Result<J::JsValue> {
        self.settle(&env);
        Err(err)
    }
}

/// A class instance passed as an untyped argument: async methods convert their arguments
/// themselves, so that a wrong one rejects their Promise instead of throwing.
pub fn class_arg<'v, T: MaybeTypeTag + 'v>(env: &Env, v: &Unknown<'v>, what: &str) -> Result<ClassInstance<'v, T>> {
    let class = std::any::type_name::<T>().rsplit("::").next().unwrap_or("object");
    // SAFETY: `v` is a live value of this call; the conversion checks that it wraps a T.
    unsafe { ClassInstance::<T>::from_napi_value(env.raw(), v.raw()) }
        .map_err(|_| invalid(format!("{what} must be a {class}")))
}

/// A JS Error with a `code` (WEFT_INVALID_ARGUMENT ...), as a rejection value.
pub fn error_value(env: &Env, code: &str, message: &str) -> napi::Error {
    let build = || -> napi::Result<napi::Error> {
        let mut obj = env.create_error(napi::Error::new(Status::GenericFailure, message.to_string()))?;
        obj.set_named_property("code", code)?;
        Ok(napi::Error::from(obj.to_unknown()))
    };
    build().unwrap_or_else(|err| err)
}

/// Run engine work, turning a panic (a bug) into a WEFT_INTERNAL error instead of
/// aborting Node.
fn catch<T>(what: &str, f: impl FnOnce() -> weft::Result<T>) -> weft::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(weft::Error::internal(format!("{}{what}: {}", napi::INTERNAL_PREFIX, panic_message(&p)))),
    }
}

/// backend.compute(graph, options).
pub struct ComputeJob {
    pub backend: Arc<dyn Backend>,
    pub graph: weft::Graph,
    pub busy: BusyGuard,
    pub watch: ComputeWatch,
}

impl Job for ComputeJob {
    type Output = ();
    type JsValue = ();
    const WHAT: &'static str = "compute";

    fn run(&mut self) -> weft::Result<()> {
        self.backend.graph_compute_observed(&self.graph, &self.watch)
    }

    fn to_js(&mut self, _env: &Env, _output: ()) -> napi::Result<()> {
        // onProgress may have thrown at the very end, after the last node
        self.watch.take_thrown().map_or(Ok(()), Err)
    }

    fn rejection(&mut self, env: &Env, e: weft::Error) -> napi::Error {
        self.watch.rejection(env, e)
    }

    fn settle(&mut self, env: &Env) {
        self.watch.settle(env);
    }
}

/// One compared node: its index in the graph, op and both backends' results as f32.
pub struct NodeResult {
    pub index: u32,
    pub op: String,
    pub op_desc: String,
    pub name: String,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
}

#[napi(object)]
pub struct NodeComparison {
    /// Index of the node in the graph.
    pub index: u32,
    #[napi(ts_type = "OpName")]
    pub op: String,
    /// The op, or the unary op for UNARY nodes (ggml_op_desc).
    #[napi(ts_type = "OpName | UnaryOp")]
    pub op_desc: String,
    pub name: String,
    /// The node computed by the backend compareGraph was called on.
    pub a: Float32Array,
    /// The node computed by the other backend.
    pub b: Float32Array,
}

/// backend.compareGraph(other, graph).
pub struct CompareJob {
    pub backend1: Arc<dyn Backend>,
    pub backend2: Arc<dyn Backend>,
    pub graph: weft::Graph,
    pub busy: BusyGuard,
}

impl Job for CompareJob {
    type Output = Vec<NodeResult>;
    type JsValue = Vec<NodeComparison>;
    const WHAT: &'static str = "compareGraph";

    fn run(&mut self) -> weft::Result<Vec<NodeResult>> {
        let mut out = Vec::new();
        weft::backend::compare::compare_graph_backend(
            self.backend1.as_ref(),
            self.backend2.as_ref(),
            &self.graph,
            |i, t1, t2| {
                out.push(NodeResult {
                    index: i as u32,
                    op: t1.op().name().to_string(),
                    op_desc: t1.op().desc().to_string(),
                    name: t1.name(),
                    a: weft::backend::tensor_to_f32_in_compute(t1)?,
                    b: weft::backend::tensor_to_f32_in_compute(t2)?,
                });
                Ok(true)
            },
        )?;
        Ok(out)
    }

    fn to_js(&mut self, _env: &Env, nodes: Vec<NodeResult>) -> napi::Result<Vec<NodeComparison>> {
        Ok(nodes
            .into_iter()
            .map(|n| NodeComparison {
                index: n.index,
                op: n.op,
                op_desc: n.op_desc,
                name: n.name,
                a: Float32Array::new(n.a),
                b: Float32Array::new(n.b),
            })
            .collect())
    }
}

/// What a ReadJob returns.
pub enum ReadOutput {
    Bytes(Vec<u8>),
    Floats(Vec<f32>),
}

/// Tensor data read off the JS thread (tensor.getAsync / toFloat32Async). The tensor's
/// buffer is held for the read, so it is not written or freed meanwhile.
pub struct ReadJob {
    pub tensor: weft::Tensor,
    /// (offset, length) of raw bytes; None reads f32 values.
    pub range: Option<(usize, usize)>,
    pub busy: BusyGuard,
}

impl Job for ReadJob {
    type Output = ReadOutput;
    type JsValue = napi::Either<Uint8Array, Float32Array>;
    const WHAT: &'static str = "read";

    fn run(&mut self) -> weft::Result<ReadOutput> {
        match self.range {
            Some((offset, len)) => {
                Ok(ReadOutput::Bytes(weft::backend::tensor_read_in_compute(&self.tensor, offset, len)?))
            }
            None => Ok(ReadOutput::Floats(weft::backend::tensor_to_f32_in_compute(&self.tensor)?)),
        }
    }

    fn to_js(&mut self, _env: &Env, output: ReadOutput) -> napi::Result<Self::JsValue> {
        Ok(match output {
            ReadOutput::Bytes(b) => napi::Either::A(Uint8Array::new(b)),
            ReadOutput::Floats(f) => napi::Either::B(Float32Array::new(f)),
        })
    }
}
