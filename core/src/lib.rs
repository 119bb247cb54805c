//! # unmix: whiten, unmix and score learned representations, with no heap and no `std`
//!
//! The recipe of Nelson et al., *Statistical and structural identifiability in representation
//! learning* (ICLR 2026): **centre, whiten, then run linear ICA** on the latents of a trained
//! model; then measure. Data flow through the crate top-down, one module per step:
//!
//! ```text
//! samples --accumulate/merge--> moments --fit--> whiten --> ica --> sources --> metrics
//! ```
//!
//! - [`moments`]: streaming, mergeable mean, covariance and cross-covariance (sums in
//!   [`Sum`](float::Sum): `f64`, or `f32` with the `f32-sums` feature).
//! - [`whiten`]: PCA / ZCA whitening to `K` of `D` components, optional Haar-random rotation.
//! - [`ica`]: FastICA (parallel and deflation, scikit-learn's contrasts and options).
//! - [`metrics`]: AUROC, sparsity and concentration, correlation, assignment, MCC, Amari index.
//! - [`linalg`]: the dense kernels underneath (symmetric eigensolver, Gram-Schmidt).
//! - [`random`]: seeded normal draws, the same bits on every target.
//! - [`float`]: `f32` and `f64` through one small trait; math through `libm`.
//! - [`error`]: the one `Copy` error enum; nothing panics on data.
//! - [`names`]: every option's name (`as_str` / `FromStr`), one table per option.
//!
//! Every type comes twice over one implementation: a const-generic form that embeds its arrays
//! (sizes fixed at compile time; fits in a `static` on a microcontroller) and a form over slices
//! the caller lends (sizes known at run time; the C ABI and the command-line tool use it). They
//! give the same bits.
//!
//! ```
//! use unmix::moments::Moments;
//! use unmix::whiten::{WhitenOptions, WhitenWorkspace, Whitener};
//!
//! // Two independent uniform-ish signals, mixed into three correlated features.
//! let mut moments = Moments::<3>::new();
//! let mut state = 1u32;
//! let mut uniform = || { state = state.wrapping_mul(1664525).wrapping_add(1013904223);
//!                        state as f64 / u32::MAX as f64 - 0.5 };
//! for _ in 0..1000 {
//!     let (a, b, c) = (uniform(), uniform(), uniform());
//!     moments.accumulate(&[a + 0.5 * b, b - c, 3.0 * c + a])?;
//! }
//! let mut ws = WhitenWorkspace::<3, 3>::new();
//! let mut whitener = Whitener::<f64, 3, 3>::new();
//! whitener.fit(moments.as_ref(), &WhitenOptions::DEFAULT, &mut ws)?;
//!
//! let x = [0.1, -0.2, 0.3];
//! let (mut z, mut back) = ([0.0; 3], [0.0; 3]);
//! whitener.transform(&x, &mut z)?;
//! whitener.inverse_transform(&z, &mut back)?;
//! assert!(x.iter().zip(&back).all(|(a, b)| (a - b).abs() < 1e-12));
//! # Ok::<(), unmix::Error>(())
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod error;
pub mod float;
pub mod ica;
pub mod linalg;
pub mod metrics;
pub mod moments;
pub mod names;
pub mod random;
pub mod whiten;

pub use error::{Error, Result};
pub use float::Float;
