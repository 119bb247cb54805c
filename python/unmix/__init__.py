"""unmix: whiten, unmix (FastICA) and score learned representations.

The numerics are the ``unmix`` Rust core (no_std, allocation-free) through a PyO3 extension:

- :class:`FastICA`: scikit-learn's ``FastICA`` (same parameters, defaults, attributes and
  results to 1e-6), plus ``canonical`` and ``n_threads``.
- :class:`Whitener`: PCA / ZCA whitening with an optional Haar-random rotation.
- :mod:`unmix.metrics`: AUROC, sparsity, concentration, MCC, Amari index, alignment, InfoMEC.
- :mod:`unmix.dask`: the same fits over a chunked ``dask.array`` (import it explicitly).
"""

from ._fastica import FastICA
from ._whitener import Whitener
from . import metrics
from ._unmix import chunk_rows as _chunk_rows

#: Rows per chunk of every pass of the core (Dask chunks that are multiples of it are used as
#: they are; others are rechunked to multiples of it).
CHUNK = _chunk_rows()

__all__ = ["FastICA", "Whitener", "metrics", "CHUNK"]
__version__ = "0.1.0"
