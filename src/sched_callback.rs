//! The scheduler's eval callback in JS: a threadsafe function the compute thread calls with
//! each node (ggml_backend_sched_eval_callback). The call runs on the JS thread while the
//! compute waits for its answer, so the event loop stays live and the node's data is
//! readable inside the call (the engine opens a read permit for it). A throw stops the
//! compute and is kept here, so the Promise rejects with the very value thrown.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{FnArgs, Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Status, ValueType};
use weft::backend::sched::EvalCallback;

use crate::error::{IntoJs, Result};
use crate::tensor::Tensor;

/// What the JS function receives: the node, and whether this is the "do you want it" call.
pub type JsEvalArgs = FnArgs<(Tensor, bool)>;
/// The JS function as passed to setEvalCallback.
pub type JsEvalFn<'a> = Function<'a, JsEvalArgs, Unknown<'static>>;
/// Weak: a scheduler holding a callback does not keep Node running.
type Tsfn = ThreadsafeFunction<(weft::Tensor, bool), Unknown<'static>, JsEvalArgs, Status, false, true>;

/// State a Scheduler shares with its running compute.
#[derive(Default)]
pub struct Shared {
    /// What the eval callback threw during the running compute.
    pub thrown: Mutex<Option<napi::Error>>,
}

impl Shared {
    pub fn take_thrown(&self) -> Option<napi::Error> {
        self.thrown.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// `false` (the boolean) means no / stop; anything else, including no return value, yes.
fn answer(v: &Unknown<'static>) -> napi::Result<bool> {
    if v.get_type()? == ValueType::Boolean {
        // SAFETY: the type was just checked.
        return unsafe { v.cast::<bool>() };
    }
    Ok(true)
}

/// The engine callback that calls `f` on the JS thread and waits for its answer.
pub fn engine_callback(f: &JsEvalFn, shared: Arc<Shared>) -> Result<EvalCallback> {
    let tsfn: Tsfn = f
        .build_threadsafe_function::<(weft::Tensor, bool)>()
        .weak::<true>()
        .build_callback(|ctx| Ok(FnArgs::from((Tensor::wrap(ctx.value.0), ctx.value.1))))
        .js()?;
    Ok(Box::new(move |t: &weft::Tensor, ask: bool| {
        let (tx, rx) = mpsc::channel::<napi::Result<bool>>();
        let status = tsfn.call_with_return_value(
            (t.clone(), ask),
            ThreadsafeFunctionCallMode::Blocking,
            move |ret: napi::Result<Unknown<'static>>, _env| {
                // The receiver is gone only if the compute already stopped.
                let _ = tx.send(ret.and_then(|v| answer(&v)));
                Ok(())
            },
        );
        if status != Status::Ok {
            return Err(weft::Error::backend(format!("eval callback: cannot call into JS ({status})")));
        }
        match rx.recv() {
            Ok(Ok(yes)) => Ok(yes),
            Ok(Err(thrown)) => {
                *shared.thrown.lock().unwrap_or_else(|e| e.into_inner()) = Some(thrown);
                Err(weft::Error::backend(format!("eval callback threw at node '{}'", t.label())))
            }
            Err(_) => Err(weft::Error::backend("eval callback: JS did not answer (Node is shutting down)")),
        }
    }))
}
