//! weft-node: the Node.js binding of the weft engine. One file per JS class; every method
//! converts its arguments, calls the engine and maps its errors (error.rs). No compute
//! logic lives here.
#![deny(clippy::all)]

#[macro_use]
extern crate napi_derive;

/// `dispose()` and `[Symbol.dispose]()` for a class whose native part is `inner: Option<_>`:
/// both drop it now, and later calls find it gone.
macro_rules! disposable {
    ($class:ident, $doc:literal) => {
        #[napi]
        impl $class {
            #[doc = $doc]
            #[napi(catch_unwind)]
            pub fn dispose(&mut self) {
                self.inner = None;
            }

            #[napi(catch_unwind, well_known_symbol = "dispose")]
            pub fn symbol_dispose(&mut self) {
                self.dispose()
            }
        }
    };
}

mod allocator;
mod backend;
mod context;
mod enums;
mod error;
mod gguf;
mod graph;
mod inspect;
mod quant;
mod task;
mod tensor;
mod watch;
