//! What runs once when the addon loads: panic counting (for `caughtPanics()`), and the
//! wrappers that code errors raised before any weft code runs — V8's receiver check on
//! instance methods and napi's accessor trampolines (receiver.js wraps the classes'
//! methods and accessors so that those errors get WEFT_ codes too).

use napi::bindgen_prelude::{Function, Object, Unknown};
use napi::Env;

#[napi(module_exports)]
pub fn init(exports: Object, env: Env) -> napi::Result<()> {
    napi::count_panics();
    let install: Function<Object, Unknown> = env.run_script(include_str!("receiver.js"))?;
    install.call(exports)?;
    Ok(())
}

/// How many panics weft has caught in this process (thrown to JS as WEFT_INTERNAL, or
/// inside a compute). Always 0 unless weft has a bug: tests and the fuzzer check it.
#[napi(catch_unwind)]
pub fn caught_panics() -> u32 {
    napi::panic_count().min(u32::MAX as usize) as u32
}
