//! The one reduction order of the Python package: a fixed binary tree over the core's chunks.
//!
//! Every pass is split into the core's [`CHUNK`]-row chunks, counted from the first row. Chunk
//! `i`'s partial result is node `(0, i)`; node `(l + 1, j)` is node `(l, 2j)` merged with node
//! `(l, 2j + 1)`. A contiguous run of chunks is summarised by a [`Segment`]: the maximal nodes
//! that cover it, in row order (at most about `2 log2(chunks)` of them). Two adjacent segments
//! combine by pushing the second's nodes onto the first, merging siblings as they meet, so every
//! node is always the same merge of the same two children, whichever process computed it. The
//! total is the fold of the final segment's nodes in row order.
//!
//! Hence the result depends only on the rows and the pass, not on the threads, the workers, the
//! Dask chunks or the order in which the tree reduction ran: the in-memory fit (on a thread
//! pool) and the Dask fit give the same bits. (The core's `InMemory` and the CLI fold the chunks
//! one after the other instead; the two orders agree to rounding, about 1e-16 relative per sum.)

use unmix::Float;
use unmix::ica::{CHUNK, Pass};

/// One node of the tree: `level`, `index` (it covers chunks `index << level ..
/// (index + 1) << level`) and its partial result.
#[derive(Clone, Debug)]
pub struct Node {
    pub level: u32,
    pub index: u64,
    pub partial: Vec<f64>,
}

/// The maximal nodes covering a contiguous run of chunks, in row order.
#[derive(Clone, Debug, Default)]
pub struct Segment {
    pub nodes: Vec<Node>,
}

impl Segment {
    /// Appends `node`, which must cover the chunks right after this segment's; merges siblings.
    pub fn push<T, P: Pass<T>>(&mut self, pass: &P, node: Node) -> unmix::Result<()> {
        if let Some(last) = self.nodes.last() {
            let end = (last.index + 1) << last.level;
            if node.index << node.level != end {
                return Err(unmix::Error::InvalidParameter(
                    "pass segments must be contiguous and in row order",
                ));
            }
        }
        self.nodes.push(node);
        while self.nodes.len() >= 2 {
            let (a, b) = (
                &self.nodes[self.nodes.len() - 2],
                &self.nodes[self.nodes.len() - 1],
            );
            if a.level != b.level || a.index % 2 != 0 || b.index != a.index + 1 {
                break;
            }
            let b = self.nodes.pop().expect("two nodes");
            let a = self.nodes.last_mut().expect("two nodes");
            pass.merge(&mut a.partial, &b.partial)?;
            a.level += 1;
            a.index /= 2;
        }
        Ok(())
    }
    /// Appends the segment that follows this one.
    pub fn append<T, P: Pass<T>>(&mut self, pass: &P, next: Segment) -> unmix::Result<()> {
        for node in next.nodes {
            self.push::<T, P>(pass, node)?;
        }
        Ok(())
    }
    /// The fold of the nodes in row order into `total` (zeroed by the caller; the first node is
    /// copied, the others merged).
    pub fn finish<T, P: Pass<T>>(&self, pass: &P, total: &mut [f64]) -> unmix::Result<()> {
        let mut nodes = self.nodes.iter();
        if let Some(first) = nodes.next() {
            if first.index << first.level != 0 {
                return Err(unmix::Error::InvalidParameter(
                    "a pass's segments must start at its first row",
                ));
            }
            let n = first.partial.len().min(total.len());
            total[..n].copy_from_slice(&first.partial[..n]);
        }
        for node in nodes {
            pass.merge(total, &node.partial)?;
        }
        Ok(())
    }
}

/// The leaf of chunk `index`: `rows` (at most [`CHUNK`] rows) accumulated into a zeroed
/// partial, compiled for AVX2 when the CPU has it (the CLI's [`harness::simd::fastest`]).
pub fn leaf<T: Float, P: Pass<T>>(pass: &P, index: u64, rows: &[T]) -> unmix::Result<Node> {
    let mut partial = vec![0.0; pass.partial_len()];
    harness::simd::fastest(
        #[inline(always)]
        || pass.accumulate(&mut partial, index * CHUNK as u64, rows),
    )?;
    Ok(Node {
        level: 0,
        index,
        partial,
    })
}
