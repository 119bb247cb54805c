//! [`FastIcaWorkspace`]: the typed workspace of the streaming fit [`FastIca::fit_white`], beside
//! [`WhitenWorkspace`](crate::whiten::WhitenWorkspace).

use core::fmt::Debug;

use crate::float::Sum;
use crate::ica::kernel::PortableRows;
use crate::ica::model::white_fit_workspace_len_rows;
#[cfg(doc)]
use crate::ica::{FastIca, stats::BLOCK_ROWS};

/// The shape `(K, ROWS)` of a [`FastIcaWorkspace`]: `K` components, `ROWS` rows per block.
///
/// Stable Rust cannot size an array by an expression of generic parameters
/// (`[Sum; white_fit_workspace_len_rows(K, ROWS)]`), so each shape names its array through
/// [`WorkspaceArray`], implemented for `K` in `1..=16` and `ROWS` in `{4, 8, 16, 32, 64, 128}`.
/// Other shapes use the slice API ([`white_fit_workspace_len_rows`] elements of [`Sum`]).
#[derive(Clone, Copy, Debug)]
pub struct Dims<const K: usize, const ROWS: usize>;

/// The array type of a [`FastIcaWorkspace`] of a given [`Dims`]: `[Sum; white_fit_workspace_len_rows(K, ROWS)]`.
pub trait WorkspaceArray {
    /// `[Sum; white_fit_workspace_len_rows(K, ROWS)]`.
    type Array: AsMut<[Sum]> + AsRef<[Sum]> + Clone + Debug;
    /// The array, zeroed.
    const ZEROED: Self::Array;
}

macro_rules! workspace_arrays {
    ($($k:literal)*) => { $( workspace_arrays!(@k $k: 4 8 16 32 64 128); )* };
    (@k $k:literal: $($rows:literal)*) => {
        $(
            impl WorkspaceArray for Dims<$k, $rows> {
                type Array = [Sum; white_fit_workspace_len_rows($k, $rows)];
                const ZEROED: Self::Array = [0.0; white_fit_workspace_len_rows($k, $rows)];
            }
        )*
    };
}

workspace_arrays!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);

/// The workspace of [`FastIca::fit_white`] for a model `D -> K`, its parallel pass in blocks of
/// `ROWS` rows on [`PortableRows<ROWS>`](PortableRows) ([`kernel`](Self::kernel)); `ROWS`
/// defaults to [`BLOCK_ROWS`] = 64, where the kernel gives [`Portable`](crate::ica::Portable)'s
/// bits. `new` is `const`, so it can live in a `static`.
///
/// ```
/// use core::cell::RefCell;
/// use critical_section::Mutex;
/// use unmix::ica::{FastIcaWorkspace, white_fit_workspace_len, white_fit_workspace_len_rows};
/// use unmix::float::Sum;
///
/// // Blocks of 8 rows instead of 64: a quarter of the RAM at K = 4.
/// static WS: Mutex<RefCell<FastIcaWorkspace<4, 4, 8>>> =
///     Mutex::new(RefCell::new(FastIcaWorkspace::new()));
/// assert_eq!(FastIcaWorkspace::<4, 4, 8>::LEN, white_fit_workspace_len_rows(4, 8));
/// assert_eq!(FastIcaWorkspace::<4, 4>::LEN, white_fit_workspace_len(4)); // 64 rows
/// assert_eq!(size_of::<FastIcaWorkspace<4, 4, 8>>(), 249 * size_of::<Sum>());
/// assert_eq!(size_of::<FastIcaWorkspace<4, 4>>(), 753 * size_of::<Sum>());
/// critical_section::with(|cs| assert_eq!(WS.borrow_ref_mut(cs).as_mut_slice().len(), 249));
/// ```
///
/// The firmware in the repository (`firmware/`) fits with one, in a `static`, next to its
/// [`WhitenWorkspace`](crate::whiten::WhitenWorkspace).
///
/// # Memory
/// [`white_fit_workspace_len_rows`]`(K, ROWS)` = `1 + 9K^2 + 8K + (2K + 1) ROWS` values of
/// [`Sum`] (`f64`, or `f32` with the `f32-sums` feature); `D` only ties it to the model's type.
/// At `K = 4`:
///
/// | `ROWS` | values | bytes, `f64` sums | bytes, `f32` sums |
/// |---|---|---|---|
/// | 64 (default) | 753 | 6024 | 3012 |
/// | 16 | 321 | 2568 | 1284 |
/// | 8 | 249 | 1992 | 996 |
/// | 4 | 213 | 1704 | 852 |
///
/// # Bits
/// Deterministic for a given `ROWS`; a different `ROWS` changes the last bits (see
/// [`PortableRows`]).
#[derive(Clone, Debug)]
pub struct FastIcaWorkspace<const D: usize, const K: usize, const ROWS: usize = 64>
where
    Dims<K, ROWS>: WorkspaceArray,
{
    buf: <Dims<K, ROWS> as WorkspaceArray>::Array,
}

impl<const D: usize, const K: usize, const ROWS: usize> FastIcaWorkspace<D, K, ROWS>
where
    Dims<K, ROWS>: WorkspaceArray,
{
    /// [`Sum`] elements held: [`white_fit_workspace_len_rows`]`(K, ROWS)`.
    pub const LEN: usize = white_fit_workspace_len_rows(K, ROWS);

    /// Zeroed. `1 <= K <= D` is checked at compile time, and `ROWS` as by [`PortableRows::new`].
    pub const fn new() -> Self {
        const { assert!(K >= 1 && K <= D, "FastICA needs 1 <= K <= D") };
        let _ = PortableRows::<ROWS>::new();
        Self {
            buf: <Dims<K, ROWS> as WorkspaceArray>::ZEROED,
        }
    }
    /// The kernel whose block this workspace holds: pass it to
    /// [`FastIca::fit_white`] with [`as_mut_slice`](Self::as_mut_slice).
    pub const fn kernel(&self) -> PortableRows<ROWS> {
        PortableRows::new()
    }
    /// The workspace as the flat slice the fits take.
    pub fn as_mut_slice(&mut self) -> &mut [Sum] {
        self.buf.as_mut()
    }
}

impl<const D: usize, const K: usize, const ROWS: usize> Default for FastIcaWorkspace<D, K, ROWS>
where
    Dims<K, ROWS>: WorkspaceArray,
{
    fn default() -> Self {
        Self::new()
    }
}
