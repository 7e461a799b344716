//! Work that runs off the JS thread (napi AsyncTask on libuv's pool): graph compute and the
//! node-by-node backend comparison. The buffers a task uses are marked in use from the
//! moment the Promise is created until it settles, so JS cannot write them underneath.

use std::sync::Arc;

use napi::bindgen_prelude::{Float32Array, JsObjectValue, Object, Uint8Array};
use napi::{Env, JsValue, Status, Task};
use weft::backend::{Backend, BusyGuard};

use crate::error::panic_message;

/// A rejected engine error as a JS Error with the engine's `code`.
pub(crate) fn reject(env: &Env, e: weft::Error) -> napi::Error {
    let build = || -> napi::Result<napi::Error> {
        let mut obj: Object = env.create_error(napi::Error::new(Status::GenericFailure, e.message.clone()))?;
        obj.set_named_property("code", e.kind.code())?;
        Ok(napi::Error::from(obj.to_unknown()))
    };
    build().unwrap_or_else(|err| err)
}

/// Run engine work, turning a panic (a bug) into an error instead of aborting Node.
pub(crate) fn catch<T>(what: &str, f: impl FnOnce() -> weft::Result<T>) -> weft::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(weft::Error::backend(format!("{what}: internal error: {}", panic_message(&p)))),
    }
}

pub struct ComputeTask {
    pub backend: Arc<dyn Backend>,
    pub graph: weft::Graph,
    pub busy: Option<BusyGuard>,
}

impl Task for ComputeTask {
    type Output = weft::Result<()>;
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(catch("compute", || self.backend.graph_compute(&self.graph)))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<()> {
        self.busy = None;
        output.map_err(|e| reject(&env, e))
    }

    fn reject(&mut self, _env: Env, err: napi::Error) -> napi::Result<()> {
        self.busy = None;
        Err(err)
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
    pub op: String,
    pub op_desc: String,
    pub name: String,
    /// The node computed by the backend compareGraph was called on.
    pub a: Float32Array,
    /// The node computed by the other backend.
    pub b: Float32Array,
}

pub struct CompareTask {
    pub backend1: Arc<dyn Backend>,
    pub backend2: Arc<dyn Backend>,
    pub graph: weft::Graph,
    pub busy: Option<BusyGuard>,
}

impl Task for CompareTask {
    type Output = weft::Result<Vec<NodeResult>>;
    type JsValue = Vec<NodeComparison>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(catch("compareGraph", || {
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
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Vec<NodeComparison>> {
        self.busy = None;
        let nodes = output.map_err(|e| reject(&env, e))?;
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

    fn reject(&mut self, _env: Env, err: napi::Error) -> napi::Result<Vec<NodeComparison>> {
        self.busy = None;
        Err(err)
    }
}

/// What a ReadTask returns.
pub enum ReadOutput {
    Bytes(Vec<u8>),
    Floats(Vec<f32>),
}

/// Tensor data read off the JS thread (tensor.getAsync / toFloat32Async). The tensor's
/// buffer is held for the read, so it is not written or freed meanwhile.
pub struct ReadTask {
    tensor: weft::Tensor,
    range: Option<(usize, usize)>,
    busy: Option<BusyGuard>,
}

impl ReadTask {
    pub fn bytes(tensor: weft::Tensor, offset: usize, len: usize) -> crate::error::Result<ReadTask> {
        use crate::error::IntoJs;
        let busy = Some(BusyGuard::for_tensors([&tensor]).js()?);
        Ok(ReadTask { tensor, range: Some((offset, len)), busy })
    }

    pub fn floats(tensor: weft::Tensor) -> crate::error::Result<ReadTask> {
        use crate::error::IntoJs;
        let busy = Some(BusyGuard::for_tensors([&tensor]).js()?);
        Ok(ReadTask { tensor, range: None, busy })
    }
}

impl Task for ReadTask {
    type Output = weft::Result<ReadOutput>;
    type JsValue = napi::Either<Uint8Array, Float32Array>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(catch("read", || match self.range {
            Some((offset, len)) => {
                let mut out = vec![0u8; len];
                weft::backend::tensor_get_in_compute(&self.tensor, &mut out, offset)?;
                Ok(ReadOutput::Bytes(out))
            }
            None => Ok(ReadOutput::Floats(weft::backend::tensor_to_f32_in_compute(&self.tensor)?)),
        }))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        self.busy = None;
        match output.map_err(|e| reject(&env, e))? {
            ReadOutput::Bytes(b) => Ok(napi::Either::A(Uint8Array::new(b))),
            ReadOutput::Floats(f) => Ok(napi::Either::B(Float32Array::new(f))),
        }
    }

    fn reject(&mut self, _env: Env, err: napi::Error) -> napi::Result<Self::JsValue> {
        self.busy = None;
        Err(err)
    }
}
