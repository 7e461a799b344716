//! ggml's dynamic tensor allocator: a best-fit free list over an unbounded address space,
//! recording the high-water mark. Used to plan offsets, not to hold memory.

use crate::{Error, Result};

const MAX_FREE_BLOCKS: usize = 256;

#[derive(Clone, Copy, Debug)]
struct Block {
    offset: usize,
    size: usize,
}

#[derive(Clone, Debug)]
pub struct FreeBlocks {
    alignment: usize,
    /// Sorted by offset; the last block is the open-ended tail.
    blocks: Vec<Block>,
    max_size: usize,
}

impl FreeBlocks {
    pub fn new(alignment: usize) -> FreeBlocks {
        let mut f = FreeBlocks { alignment: alignment.max(1), blocks: Vec::new(), max_size: 0 };
        f.reset();
        f
    }

    pub fn reset(&mut self) {
        // Half of the address space, so offsets plus sizes cannot overflow.
        self.blocks = vec![Block { offset: 0, size: usize::MAX / 2 }];
        self.max_size = 0;
    }

    /// Bytes the plan needs: the end of the furthest allocation.
    pub fn max_size(&self) -> usize {
        self.max_size
    }

    fn aligned(&self, size: usize) -> usize {
        super::align_up(size, self.alignment)
    }

    pub fn alloc(&mut self, size: usize, what: &str) -> Result<usize> {
        let size = self.aligned(size);
        // Best fit among all but the tail; the tail is the last resort.
        let last = self.blocks.len() - 1;
        let mut best: Option<usize> = None;
        for (i, b) in self.blocks[..last].iter().enumerate() {
            if b.size >= size && best.is_none_or(|j| b.size <= self.blocks[j].size) {
                best = Some(i);
            }
        }
        let i = match best {
            Some(i) => i,
            None if self.blocks[last].size >= size => last,
            None => {
                return Err(Error::oom(format!("graph allocator: no room for {size} bytes for '{what}'")));
            }
        };
        let offset = self.blocks[i].offset;
        self.blocks[i].offset += size;
        self.blocks[i].size -= size;
        if self.blocks[i].size == 0 {
            self.blocks.remove(i);
        }
        self.max_size = self.max_size.max(offset + size);
        Ok(offset)
    }

    pub fn free(&mut self, offset: usize, size: usize) -> Result<()> {
        let size = self.aligned(size);
        for i in 0..self.blocks.len() {
            let b = self.blocks[i];
            if b.offset + b.size == offset {
                // Extends block i; maybe it now touches block i+1.
                self.blocks[i].size += size;
                if i + 1 < self.blocks.len() && self.blocks[i].offset + self.blocks[i].size == self.blocks[i + 1].offset
                {
                    self.blocks[i].size += self.blocks[i + 1].size;
                    self.blocks.remove(i + 1);
                }
                return Ok(());
            }
            if offset + size == b.offset {
                // Prepends to block i; maybe it now touches block i-1.
                self.blocks[i].offset = offset;
                self.blocks[i].size += size;
                if i > 0 && self.blocks[i - 1].offset + self.blocks[i - 1].size == self.blocks[i].offset {
                    self.blocks[i - 1].size += self.blocks[i].size;
                    self.blocks.remove(i);
                }
                return Ok(());
            }
        }
        if self.blocks.len() >= MAX_FREE_BLOCKS {
            return Err(Error::oom("graph allocator: out of free blocks (memory too fragmented)"));
        }
        let pos = self.blocks.iter().position(|b| b.offset >= offset).unwrap_or(self.blocks.len());
        self.blocks.insert(pos, Block { offset, size });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_space_best_fit() {
        let mut f = FreeBlocks::new(32);
        let a = f.alloc(100, "a").unwrap(); // 128 bytes at 0
        let b = f.alloc(64, "b").unwrap(); // at 128
        let c = f.alloc(32, "c").unwrap(); // at 192
        assert_eq!((a, b, c), (0, 128, 192));
        f.free(b, 64).unwrap();
        // 40 bytes (64 aligned) fits the 64-byte hole exactly.
        assert_eq!(f.alloc(40, "d").unwrap(), 128);
        f.free(a, 100).unwrap();
        f.free(c, 32).unwrap();
        assert_eq!(f.max_size(), 224);
        // Freed neighbours merge: a 128-byte request fits at 0 again.
        assert_eq!(f.alloc(128, "e").unwrap(), 0);
    }
}
