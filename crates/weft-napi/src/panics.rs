//! A count of the panics in this addon's threads (the JS thread, libuv's pool, rayon's and
//! wgpu's threads). Every panic is a bug, even one caught and thrown to JS as WEFT_INTERNAL,
//! so tests and the fuzzer read the count and fail on any.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

static PANICS: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

/// Count panics from now on (the default report to stderr stays).
pub fn count_panics() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::Relaxed);
            previous(info);
        }));
    });
}

/// Panics seen since count_panics().
pub fn panic_count() -> usize {
    PANICS.load(Ordering::Relaxed)
}
