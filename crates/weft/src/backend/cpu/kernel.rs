//! What a CPU kernel gets: the thread pool, and helpers to split work over it.

use std::ops::Range;

use rayon::prelude::*;

use crate::tensor::Tensor;
use crate::Result;

/// A kernel: whether it can compute a node (types, layouts), and the computation.
#[derive(Clone, Copy)]
pub struct Kernel {
    pub supports: fn(&Tensor) -> bool,
    pub run: fn(&Tensor, &Cx) -> Result<()>,
}

pub struct Cx<'a> {
    pool: &'a rayon::ThreadPool,
}

impl<'a> Cx<'a> {
    pub fn new(pool: &'a rayon::ThreadPool) -> Cx<'a> {
        Cx { pool }
    }

    pub fn n_threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Run `f` on contiguous chunks of `0..n`, in parallel. `min_chunk` keeps tiny work
    /// from being split (each chunk should be worth a few microseconds).
    pub fn par_ranges<F>(&self, n: usize, min_chunk: usize, f: F)
    where
        F: Fn(Range<usize>) + Sync + Send,
    {
        if n == 0 {
            return;
        }
        let nth = self.n_threads().max(1);
        // A few chunks per thread balance uneven rows without much overhead.
        let chunk = n.div_ceil(nth * 4).max(min_chunk.max(1));
        if chunk >= n || nth == 1 {
            f(0..n);
            return;
        }
        let n_chunks = n.div_ceil(chunk);
        self.pool.install(|| {
            (0..n_chunks).into_par_iter().for_each(|c| {
                let r0 = c * chunk;
                f(r0..(r0 + chunk).min(n));
            })
        });
    }

    /// Like par_ranges, but each chunk may fail; the first error wins.
    pub fn try_par_ranges<F>(&self, n: usize, min_chunk: usize, f: F) -> Result<()>
    where
        F: Fn(Range<usize>) -> Result<()> + Sync + Send,
    {
        let err = std::sync::Mutex::new(None);
        self.par_ranges(n, min_chunk, |r| {
            if let Err(e) = f(r) {
                err.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
            }
        });
        match err.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
