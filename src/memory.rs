//! Native memory reported to V8. A JS object that owns a large native allocation (a
//! Context's pool, a BackendBuffer, a GraphAllocator's buffers, a Gguf parsed from bytes)
//! looks small to V8, so a loop that drops such objects without dispose() would grow
//! without V8 ever collecting them. Each such object holds an `External` with the bytes it
//! keeps alive: reported with napi_adjust_external_memory when the memory appears, taken
//! back on dispose() or when the object is garbage collected (its class has
//! `custom_finalize` and calls `release` from `ObjectFinalize::finalize`).

use std::cell::Cell;

use napi::Env;

/// The bytes one JS object has reported (a Cell: JS objects are used from one thread, and
/// `&self` methods such as setters update it).
#[derive(Default)]
pub struct External {
    bytes: Cell<i64>,
}

impl External {
    /// Report `bytes` now held.
    pub fn report(env: &Env, bytes: usize) -> External {
        let e = External::default();
        e.update(env, bytes);
        e
    }

    /// The object now holds `bytes` (a graph allocator's buffers grow and shrink).
    pub fn update(&self, env: &Env, bytes: usize) {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        let delta = bytes - self.bytes.get();
        // Nothing to do about a failure: the count only steers the collector.
        if delta != 0 && env.adjust_external_memory(delta).is_ok() {
            self.bytes.set(bytes);
        }
    }

    /// The memory is gone (dispose, or the object was collected).
    pub fn release(&self, env: &Env) {
        self.update(env, 0);
    }
}

/// `ObjectFinalize` for classes holding an `External` in a field named `external`: what they
/// reported is taken back when V8 collects the object. Use with `#[napi(custom_finalize)]`.
macro_rules! release_external_on_finalize {
    ($($class:ty),* $(,)?) => {$(
        impl napi::bindgen_prelude::ObjectFinalize for $class {
            fn finalize(self, env: napi::Env) -> napi::Result<()> {
                self.external.release(&env);
                Ok(())
            }
        }
    )*};
}
pub(crate) use release_external_on_finalize;
