//! Backend.compute's options: an AbortSignal that stops the compute between nodes and an
//! onProgress callback, joined to the engine as its ComputeObserver (ggml's abort callback,
//! asked before each node). The options object is read field by field inside the call, so a
//! bad option rejects the Promise instead of throwing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, JsObjectValue, Object, ObjectRef, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue};
use napi::{Env, JsValue, Status, ValueType};
use weft::backend::ComputeObserver;

use crate::args::{is_nullish, present};
use crate::error::{invalid, IntoJs, Result};
use crate::task::error_value;

// Declared for index.d.ts only: ComputeWatch::new reads the object field by field.
/// Options of Backend.compute.
#[napi(object, object_from_js = false, object_to_js = false)]
#[allow(dead_code)]
pub struct ComputeOptions {
    /// Stops the compute before its next node once aborted; the Promise then rejects with an
    /// AbortError (`name` 'AbortError', `code` 'ABORT_ERR', `cause` the signal's reason).
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<()>,
    /// Called on the JS thread with (nodesDone, nodesTotal) as the compute advances: each time
    /// the whole percentage changes (so at most 101 times) and with (total, total) before the
    /// Promise resolves. If it throws, the compute stops and the Promise rejects with what it
    /// threw.
    #[napi(ts_type = "(nodesDone: number, nodesTotal: number) => void")]
    pub on_progress: Option<()>,
}

/// A JS progress callback `(done, total) => void` callable from any thread; weak: it does not
/// keep Node running by itself.
pub type ProgressFn =
    ThreadsafeFunction<FnArgs<(f64, f64)>, UnknownReturnValue, FnArgs<(f64, f64)>, Status, false, true>;

/// `f` as a ProgressFn (the caller checked it is a function).
pub fn progress_fn(f: Unknown) -> Result<ProgressFn> {
    // SAFETY: the caller checked the type.
    let f: Function<FnArgs<(f64, f64)>, UnknownReturnValue> = unsafe { f.cast() }.js()?;
    f.build_threadsafe_function::<FnArgs<(f64, f64)>>().weak::<true>().build().js()
}

/// Call `callback(done, total)` on the JS thread; `on_throw` gets what it threw. With `wait`
/// (the last report), return only once JS has run it, and so every report queued before it:
/// all of them then come before the Promise of the work settles.
pub fn report(
    callback: &ProgressFn,
    done: usize,
    total: usize,
    wait: bool,
    on_throw: impl FnOnce(napi::Error) + Send + 'static,
) {
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let status = callback.call_with_return_value(
        FnArgs::from((done as f64, total as f64)),
        ThreadsafeFunctionCallMode::NonBlocking,
        move |r, _env| {
            if let Err(e) = r {
                on_throw(e);
            }
            let _ = done_tx.send(());
            Ok(())
        },
    );
    if wait && status == Status::Ok {
        // Err: the callback was dropped unrun (the environment is shutting down)
        let _ = done_rx.recv();
    }
}

/// onProgress, called from the compute's thread through a threadsafe function.
struct Progress {
    callback: ProgressFn,
    /// The percentage last reported (usize::MAX before the first report).
    last_pct: AtomicUsize,
}

/// The abort listener added to the signal, removed when the Promise settles.
struct Listener {
    signal: ObjectRef<false>,
    listener: FunctionRef<(), ()>,
}

/// What one compute is watched by.
pub struct ComputeWatch {
    stop: Arc<AtomicBool>,
    progress: Option<Progress>,
    /// What onProgress threw, if it did.
    thrown: Arc<Mutex<Option<napi::Error>>>,
    listener: Mutex<Option<Listener>>,
}

impl ComputeWatch {
    /// Read `options` ({ signal?, onProgress? }, or undefined) and start watching.
    pub fn new(env: &Env, options: Option<Unknown>) -> Result<ComputeWatch> {
        let mut watch = ComputeWatch {
            stop: Arc::new(AtomicBool::new(false)),
            progress: None,
            thrown: Arc::new(Mutex::new(None)),
            listener: Mutex::new(None),
        };
        let Some(options) = present(options)? else { return Ok(watch) };
        if options.get_type().js()? != ValueType::Object {
            return Err(invalid("compute: options must be an object ({ signal?, onProgress? })"));
        }
        let options: Object = unsafe { options.cast() }.js()?;
        let signal: Unknown = options.get_named_property("signal").js()?;
        let on_progress: Unknown = options.get_named_property("onProgress").js()?;
        if !is_nullish(&on_progress)? {
            if on_progress.get_type().js()? != ValueType::Function {
                return Err(invalid("compute: options.onProgress must be a function (nodesDone, nodesTotal) => void"));
            }
            let callback = progress_fn(on_progress)?;
            watch.progress = Some(Progress { callback, last_pct: AtomicUsize::new(usize::MAX) });
        }
        if !is_nullish(&signal)? {
            *watch.listener.get_mut().expect("unshared") = Some(watch.listen(env, signal)?);
        }
        Ok(watch)
    }

    /// Add an abort listener to `signal` (an AbortSignal: `aborted` and `addEventListener`).
    fn listen(&self, env: &Env, signal: Unknown) -> Result<Listener> {
        const NOT_A_SIGNAL: &str = "compute: options.signal must be an AbortSignal";
        if signal.get_type().js()? != ValueType::Object {
            return Err(invalid(NOT_A_SIGNAL));
        }
        let signal: Object = unsafe { signal.cast() }.js()?;
        let aborted: Unknown = signal.get_named_property("aborted").js()?;
        let add: Unknown = signal.get_named_property("addEventListener").js()?;
        if aborted.get_type().js()? != ValueType::Boolean || add.get_type().js()? != ValueType::Function {
            return Err(invalid(NOT_A_SIGNAL));
        }
        if unsafe { aborted.cast::<bool>() }.js()? {
            self.stop.store(true, Ordering::Release);
        }
        let stop = self.stop.clone();
        let listener = env
            .create_function_from_closure::<(), (), _>("onComputeAbort", move |_| {
                stop.store(true, Ordering::Release);
                Ok(())
            })
            .js()?;
        let add: Function<FnArgs<(&str, Unknown)>, Unknown> = unsafe { add.cast() }.js()?;
        add.apply(signal, FnArgs::from(("abort", listener.to_unknown()))).js()?;
        Ok(Listener { signal: signal.create_ref().js()?, listener: listener.create_ref().js()? })
    }

    /// What onProgress threw, once.
    pub fn take_thrown(&self) -> Option<napi::Error> {
        self.thrown.lock().ok()?.take()
    }

    /// The rejection for an engine error: what onProgress threw, an AbortError for an abort,
    /// or the engine's error.
    pub fn rejection(&self, env: &Env, e: weft::Error) -> napi::Error {
        if let Some(thrown) = self.take_thrown() {
            return thrown;
        }
        if e.kind != weft::ErrorKind::Aborted {
            return error_value(env, e.kind.code(), &e.message);
        }
        let reason = self.listener.lock().ok().and_then(|l| {
            let l = l.as_ref()?;
            l.signal.get_value(env).ok()?.get_named_property::<Unknown>("reason").ok()
        });
        let build = || -> napi::Result<napi::Error> {
            let mut obj = env.create_error(napi::Error::new(Status::GenericFailure, e.message.clone()))?;
            obj.set_named_property("name", "AbortError")?;
            obj.set_named_property("code", "ABORT_ERR")?;
            if let Some(reason) = reason {
                obj.set_named_property("cause", reason)?;
            }
            Ok(napi::Error::from(obj.to_unknown()))
        };
        build().unwrap_or_else(|err| err)
    }

    /// Remove the abort listener and drop the references (JS thread, Promise settled).
    pub fn settle(&self, env: &Env) {
        let Some(Listener { signal, listener }) = self.listener.lock().ok().and_then(|mut l| l.take()) else {
            return;
        };
        let remove = || -> napi::Result<()> {
            let obj = signal.get_value(env)?;
            let remove: Function<FnArgs<(&str, Unknown)>, Unknown> = obj.get_named_property("removeEventListener")?;
            remove.apply(obj, FnArgs::from(("abort", listener.borrow_back(env)?.to_unknown())))?;
            Ok(())
        };
        // a signal whose removeEventListener fails keeps a listener that only sets a flag
        let _ = remove();
        let _ = signal.unref(env);
    }
}

impl ComputeObserver for ComputeWatch {
    fn progress(&self, done: usize, total: usize) {
        let Some(p) = &self.progress else { return };
        let pct = (done * 100).checked_div(total).unwrap_or(100);
        let end = done == total;
        if p.last_pct.swap(pct, Ordering::AcqRel) == pct && !end {
            return;
        }
        let (stop, thrown) = (self.stop.clone(), self.thrown.clone());
        report(&p.callback, done, total, end, move |e| {
            if let Ok(mut t) = thrown.lock() {
                t.get_or_insert(e);
            }
            stop.store(true, Ordering::Release);
        });
    }

    fn should_abort(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn wants_steps(&self) -> bool {
        self.progress.is_some() || self.listener.lock().is_ok_and(|l| l.is_some())
    }
}
