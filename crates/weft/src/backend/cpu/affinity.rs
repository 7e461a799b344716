//! Pinning the pool's threads to CPUs (ggml's `ggml_threadpool_params.strict_cpu`).
//!
//! Why: when a compute wakes the pool, Linux's wake-affine placement often puts the woken
//! thread on the waker's CPU; two threads then share one CPU for milliseconds until the load
//! balancer moves one. Traced on this project's 2-CPU machine: in a 512^3 MUL_MAT the second
//! thread's first block started 0.5-3 ms late, or the first thread ran every block. ggml's
//! and OpenBLAS's threads spin between calls and stay where they are; rayon's sleep.
//!
//! The policy (`Strict`): `Auto` pins thread i to the i-th CPU this process may use when the
//! pool has exactly one thread per such CPU, which changes no CPU's share and only stops two
//! threads from stacking on one; a smaller pool is left to the OS (it may share the machine
//! with other work). `On` pins round-robin whatever the counts; `Off` never pins.
//! Pinning is Linux only; elsewhere it is a no-op.

/// When the pool's threads are pinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strict {
    Auto,
    On,
    Off,
}

impl Strict {
    /// The `strict_cpu` option's value: `auto`, `1` / `true` or `0` / `false`.
    pub fn parse(value: &str) -> Option<Strict> {
        match value {
            "auto" => Some(Strict::Auto),
            "1" | "true" => Some(Strict::On),
            "0" | "false" => Some(Strict::Off),
            _ => None,
        }
    }

    /// The CPU for each of `n_threads` threads, or None to leave them to the OS.
    pub fn plan(self, n_threads: usize) -> Option<Vec<usize>> {
        let cpus = allowed_cpus();
        if cpus.len() < 2 || self == Strict::Off || (self == Strict::Auto && cpus.len() != n_threads) {
            return None;
        }
        Some((0..n_threads).map(|i| cpus[i % cpus.len()]).collect())
    }
}

/// The CPUs this process may run on, in order.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pin the calling thread to `cpu`; a refusal (a CPU taken away meanwhile) leaves it free.
#[cfg(target_os = "linux")]
pub fn pin_current(cpu: usize) {
    // SAFETY: as above; cpu < CPU_SETSIZE because it came from the allowed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
pub fn pin_current(_cpu: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_plan() {
        assert_eq!(Strict::parse("auto"), Some(Strict::Auto));
        assert_eq!(Strict::parse("1"), Some(Strict::On));
        assert_eq!(Strict::parse("false"), Some(Strict::Off));
        assert_eq!(Strict::parse("yes"), None);
        assert_eq!(Strict::Off.plan(2), None);
        let cpus = allowed_cpus();
        if cpus.len() >= 2 {
            // One thread per allowed CPU: pinned in order; fewer: left alone unless forced.
            assert_eq!(Strict::Auto.plan(cpus.len()), Some(cpus.clone()));
            assert_eq!(Strict::Auto.plan(1), None);
            let forced = Strict::On.plan(cpus.len() + 1).unwrap();
            assert_eq!(forced.len(), cpus.len() + 1);
            assert_eq!(forced[cpus.len()], cpus[0]);
        }
    }
}
