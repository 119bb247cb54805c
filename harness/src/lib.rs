//! The `unmix` command's library: file I/O, the pipelines behind each subcommand, and the demo.
//! The numerics all live in the `unmix` core; this crate only moves data in and out of it.

pub mod blocks;
pub mod cmd;
pub mod concentration;
pub mod demo;
pub mod fastica;
pub mod identifiability;
pub mod io;
pub mod metric;
pub mod model;
pub mod moments;
pub mod output;
pub mod phases;
pub mod pipeline;
pub mod plot;
pub mod report;
pub mod simd;
pub mod small8;
pub mod vmath;
pub mod widen;
