//! weft-node: the Node.js binding of the weft engine. One file per JS class; every method
//! converts its arguments, calls the engine and maps its errors (error.rs). No compute
//! logic lives here.
#![deny(clippy::all)]

#[macro_use]
extern crate napi_derive;

/// `dispose()` and `[Symbol.dispose]()` for a class whose native part is `inner: Option<_>`:
/// both drop it now, and later calls find it gone. `external`: the class also gives back
/// the memory it reported to V8 (memory.rs). `custom`: the class frees in its own
/// `fn free(&mut self, env) -> Result<()>` (checks that may refuse, such as a busy buffer).
macro_rules! disposable {
    ($class:ident, $doc:literal) => {
        disposable!(@impl $class, $doc, |this, _env| {
            this.inner = None;
            Ok(())
        });
    };
    ($class:ident, $doc:literal, external) => {
        disposable!(@impl $class, $doc, |this, env| {
            this.inner = None;
            this.external.release(env);
            Ok(())
        });
    };
    ($class:ident, $doc:literal, custom) => {
        disposable!(@impl $class, $doc, |this, env| this.free(env));
    };
    (@impl $class:ident, $doc:literal, |$this:ident, $env:ident| $body:expr) => {
        #[napi]
        impl $class {
            #[doc = $doc]
            #[napi(catch_unwind)]
            pub fn dispose(&mut self, env: &napi::Env) -> crate::error::Result<()> {
                let ($this, $env) = (self, env);
                $body
            }

            #[napi(catch_unwind, well_known_symbol = "dispose")]
            pub fn symbol_dispose(&mut self, env: &napi::Env) -> crate::error::Result<()> {
                self.dispose(env)
            }
        }
    };
}

mod allocator;
mod args;
mod backend;
mod context;
mod context_nn;
mod enums;
mod error;
mod gguf;
mod gguf_values;
mod graph;
mod init;
mod inspect;
mod memory;
mod options;
mod quant;
mod sched_callback;
mod sched_task;
mod scheduler;
mod task;
mod tensor;
mod watch;
