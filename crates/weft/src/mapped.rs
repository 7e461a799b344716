//! Read-only memory maps of files that survive the file shrinking under them.
//!
//! A mapped file that another process truncates (or rewrites shorter) turns every read of
//! the pages past its new end into SIGBUS, which kills Node. [`MappedFile`] registers its
//! range with a process-wide SIGBUS handler: a fault inside a registered range maps a page
//! of zeros over the missing page and marks the map as damaged, so the read that faulted
//! completes (reading zeros) and the owner reports an error afterwards
//! ([`MappedFile::check_intact`]). Faults anywhere else go to the handler that was there
//! before (or the default action), unchanged.
//!
//! Linux and macOS only. Windows refuses to truncate a mapped file, so there plain maps are
//! safe; other systems get plain maps too.

use std::fs::File;
use std::io;

use memmap2::Mmap;

use crate::{Error, Result};

/// A read-only map of a whole file; see the module docs.
pub struct MappedFile {
    map: Mmap,
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    slot: usize,
}

impl MappedFile {
    /// Map `file` read-only. None when the map cannot be made (empty files, pipes) or when
    /// too many maps are open to guard another one: the caller then reads the file.
    pub fn map(file: &File) -> io::Result<Option<MappedFile>> {
        if file.metadata()?.len() == 0 {
            return Ok(None);
        }
        // SAFETY: the map is read-only and read only through slices of it; a file shrinking
        // under it is what the guard below turns from SIGBUS into an error.
        let Ok(map) = (unsafe { Mmap::map(file) }) else { return Ok(None) };
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        {
            let Some(slot) = guard::register(map.as_ptr() as usize, map.len()) else { return Ok(None) };
            Ok(Some(MappedFile { map, slot }))
        }
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        Ok(Some(MappedFile { map }))
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.map
    }

    /// An error if any read of the map reached pages the file no longer had (those reads
    /// returned zeros). Check after using data read from the map.
    pub fn check_intact(&self) -> Result<()> {
        #[cfg(any(target_os = "linux", target_os = "macos"))]
        if guard::was_hit(self.slot) {
            return Err(Error::new(
                crate::ErrorKind::Io,
                "the file shrank or was rewritten while it was mapped: data read from it is lost (reopen it)",
            ));
        }
        Ok(())
    }
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
impl Drop for MappedFile {
    fn drop(&mut self) {
        // Before the map goes: no read of it can fault any more.
        guard::unregister(self.slot);
    }
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod guard {
    //! The registry of guarded ranges and the SIGBUS handler. The handler only reads
    //! atomics and calls `mmap`, a system call, which is what a signal handler may do.

    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Once;

    /// How many maps can be guarded at once; more are read into memory instead.
    const SLOTS: usize = 1024;
    const FREE: usize = 0;
    const CLAIMED: usize = 1;
    const ACTIVE: usize = 2;

    struct Slot {
        state: AtomicUsize,
        start: AtomicUsize,
        len: AtomicUsize,
        hit: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Slot = Slot {
        state: AtomicUsize::new(FREE),
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        hit: AtomicBool::new(false),
    };
    static SLOTS_TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    static INSTALL: Once = Once::new();
    /// The handler that was installed before ours, for faults that are not ours.
    static mut PREVIOUS: Option<libc::sigaction> = None;

    pub fn register(start: usize, len: usize) -> Option<usize> {
        install();
        for (i, s) in SLOTS_TABLE.iter().enumerate() {
            if s.state.compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                s.start.store(start, Ordering::Relaxed);
                s.len.store(len, Ordering::Relaxed);
                s.hit.store(false, Ordering::Relaxed);
                s.state.store(ACTIVE, Ordering::Release);
                return Some(i);
            }
        }
        None
    }

    pub fn unregister(slot: usize) {
        SLOTS_TABLE[slot].state.store(FREE, Ordering::Release);
    }

    pub fn was_hit(slot: usize) -> bool {
        SLOTS_TABLE[slot].hit.load(Ordering::Acquire)
    }

    fn install() {
        INSTALL.call_once(|| {
            // SAFETY: plain libc calls with valid arguments; PREVIOUS is written once, here,
            // before the handler that reads it is installed.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE);
                if page > 0 {
                    PAGE.store(page as usize, Ordering::Relaxed);
                }
                let mut previous: libc::sigaction = std::mem::zeroed();
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) == 0 {
                    PREVIOUS = Some(previous);
                    libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
                }
            }
        });
    }

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        let page = PAGE.load(Ordering::Relaxed);
        for s in &SLOTS_TABLE {
            if s.state.load(Ordering::Acquire) != ACTIVE {
                continue;
            }
            let (start, len) = (s.start.load(Ordering::Relaxed), s.len.load(Ordering::Relaxed));
            if addr < start || addr - start >= len {
                continue;
            }
            s.hit.store(true, Ordering::Release);
            let at = addr & !(page - 1);
            // SAFETY: replaces one page of our own read-only file map with zeros; the map
            // stays registered (so alive) while its reads can fault.
            let r = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if r != libc::MAP_FAILED {
                return; // the faulting read runs again and reads zeros
            }
            break;
        }
        // SAFETY: PREVIOUS was set before this handler was installed and never changes.
        unsafe { chain(sig, info, ctx) }
    }

    /// Hand a fault that is not ours to the previous handler, or to the default action.
    unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        let previous = unsafe { (*std::ptr::addr_of!(PREVIOUS)).as_ref() };
        match previous {
            Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
                if p.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        unsafe { std::mem::transmute(p.sa_sigaction) };
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                // Default action: restore it; the faulting instruction runs again and the
                // process ends with SIGBUS, as it would have without us.
                let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
                dfl.sa_sigaction = libc::SIG_DFL;
                unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_after_the_file_shrinks_give_an_error_not_sigbus() {
        let dir = std::env::temp_dir().join(format!("weft-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shrinks.bin");
        let len = 64 * 1024 * 3 + 5;
        std::fs::File::create(&path).unwrap().write_all(&vec![7u8; len]).unwrap();
        let file = File::open(&path).unwrap();
        let map = MappedFile::map(&file).unwrap().unwrap();
        assert_eq!(map.as_slice()[len - 1], 7);
        map.check_intact().unwrap();

        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(10).unwrap();
        // Without the guard this read ends the test process with SIGBUS.
        let tail: u64 = map.as_slice()[8192..].iter().map(|&b| b as u64).sum();
        assert_eq!(tail, 0, "pages past the new end read as zeros");
        assert_eq!(map.as_slice()[3], 7, "the page still in the file keeps its data");
        let e = map.check_intact().unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Io);
        assert!(e.message.contains("shrank"), "{e}");

        // Another map of the same path is independent and intact.
        drop(map);
        let again = MappedFile::map(&File::open(&path).unwrap()).unwrap().unwrap();
        assert_eq!(again.as_slice().len(), 10);
        again.check_intact().unwrap();
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn empty_files_are_not_mapped() {
        let dir = std::env::temp_dir().join(format!("weft-mapped-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty.bin");
        std::fs::File::create(&path).unwrap();
        assert!(MappedFile::map(&File::open(&path).unwrap()).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
