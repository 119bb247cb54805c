"""FastICA and whitening over a chunked ``dask.array``: every pass runs on the workers.

The fit is the core's one driver, running in this process; each pass it asks for is shipped
to the workers as plain data (the core's ``PassSpec``: the kind of pass, the unmixing ``W``, the
contrast, and for passes over white rows the ``K x D`` whitener). Each block of rows is reduced
on its worker to a few partial sums, the rows whitened chunk by chunk on the fly, and a binary
tree of ``combine`` tasks merges the partials in row order. So a worker holds one block, the
whitener, one chunk of white rows and O(log(chunks)) partials (D^2 numbers each for the
moments, O(K^2) for the iterations), and the data are never gathered.

Blocks must span all features (chunked along rows only). Row blocks that are multiples of
``unmix.CHUNK`` (4096) rows are used as they are; other row chunkings are first rechunked to
multiples of it (moving rows between neighbouring blocks, never gathering them). The reduction
order is a fixed tree over the core's chunks, so the model is bit for bit the in-memory
``unmix.FastICA`` / ``unmix.Whitener`` fit of the same rows, whatever the chunking and the
number of workers.
"""

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as e:  # pragma: no cover
    raise ImportError("unmix.dask needs dask: pip install 'dask[array]' distributed") from e

from sklearn.utils.validation import check_is_fitted

from . import _unmix
from . import _fastica, _whitener

CHUNK = _unmix.chunk_rows()

__all__ = ["FastICA", "Whitener", "aligned_rows"]


def _check(X):
    """A 2-D float dask array chunked along rows only (integers become float64)."""
    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask.array.Array, got {type(X).__name__}; use unmix.FastICA for numpy arrays")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got {X.ndim}-D")
    if any(np.isnan(c) for cs in X.chunks for c in cs):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first")
    if len(X.chunks[1]) != 1:
        raise ValueError(
            f"X is chunked along features ({len(X.chunks[1])} column blocks: {X.chunks[1]}); "
            "every block must hold whole rows: use X.rechunk({1: -1})"
        )
    if np.issubdtype(X.dtype, np.complexfloating) or not (
        np.issubdtype(X.dtype, np.number) or X.dtype == bool
    ):
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.shape[0] < 2:
        raise ValueError(f"X has {X.shape[0]} sample(s); at least 2 are needed")
    if X.shape[1] < 1:
        raise ValueError("X has no features")
    return X


def aligned_rows(X):
    """``X`` with row blocks that start at multiples of the core's chunk (``unmix.CHUNK`` rows):
    ``X`` itself if they already do, else ``X`` rechunked to the nearest such boundaries."""
    n = X.shape[0]
    ends = np.cumsum(X.chunks[0])
    if all(e % CHUNK == 0 for e in ends[:-1]):
        return X
    cuts = sorted({min(n, int(round(e / CHUNK)) * CHUNK) for e in ends[:-1]} - {0, n})
    bounds = [0] + cuts + [n]
    return X.rechunk({0: tuple(b - a for a, b in zip(bounds, bounds[1:])), 1: -1})


def _aligned(a):
    """C order and aligned: arrays deserialised by distributed can be unaligned views, which the
    extension refuses."""
    return np.require(a, requirements=["C", "A"])


def _spec(spec):
    if "w" in spec:
        spec = dict(spec, w=_aligned(spec["w"]))
    return spec


def _segment(seg):
    return [(level, index, _aligned(p)) for level, index, p in seg]


def _block(spec, x, first, whitener, k):
    if whitener is None:
        return _unmix.pass_block(_spec(spec), _aligned(x), first)
    return _unmix.pass_block(_spec(spec), _aligned(x), first, _aligned(whitener), k)


def _combine(spec, a, b):
    return _unmix.pass_combine(_spec(spec), _segment(a), _segment(b))


class _Runner:
    """Runs one pass over the row blocks of ``X``: a task per block, then a binary tree of
    combine tasks in row order; returns the final segment."""

    def __init__(self, X):
        self.X = X
        self.blocks = list(X.to_delayed()[:, 0])
        self.starts = np.concatenate([[0], np.cumsum(X.chunks[0])[:-1]]).astype(int).tolist()
        self.passes = 0

    def __call__(self, spec):
        whitener = spec.pop("whitener", None)
        k = spec.pop("whitener_k", None)
        if whitener is not None:
            whitener = dask.delayed(whitener, pure=True)
        segs = [
            dask.delayed(_block, pure=True)(spec, b, s, whitener, k)
            for b, s in zip(self.blocks, self.starts)
        ]
        while len(segs) > 1:
            segs = [
                dask.delayed(_combine, pure=True)(spec, segs[i], segs[i + 1]) if i + 1 < len(segs) else segs[i]
                for i in range(0, len(segs), 2)
            ]
        self.passes += 1
        (seg,) = dask.compute(segs[0], optimize_graph=False)
        return _segment(seg)


class FastICA(_fastica.FastICA):
    """:class:`unmix.FastICA` whose ``fit`` takes a chunked ``dask.array`` and whose
    ``transform`` / ``inverse_transform`` of a dask array are ``map_blocks`` (numpy arrays go
    to the in-memory path). Same parameters; ``n_threads`` applies to numpy inputs only.
    Extra attribute after a Dask fit: ``n_passes_`` (passes over the data)."""

    def fit(self, X, y=None):
        if not isinstance(X, da.Array):
            return super().fit(X, y)
        whiten, alpha = _fastica._options(self)
        X = aligned_rows(_check(X))
        n, d = X.shape
        k = _fastica._n_components(self, n, d)
        w = _fastica._w_init(self, k, X.dtype)
        runner = _Runner(X)
        result = _unmix.fastica_fit_remote(
            runner, d, str(X.dtype), k, self.algorithm, whiten, self.fun, alpha,
            int(self.max_iter), float(self.tol), w, bool(self.canonical),
        )
        self.n_features_in_ = d
        _fastica._set_model(self, result, d, k, X.dtype)
        self.n_passes_ = runner.passes
        return self

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def transform(self, X, copy=True):
        if not isinstance(X, da.Array):
            return super().transform(X, copy)
        check_is_fitted(self, "_model")
        X = _check(X)
        if X.shape[1] != self._d:
            raise ValueError(f"X has {X.shape[1]} features, but FastICA is expecting {self._d} features as input")
        model, d, k = self._model, self._d, self._k
        return X.astype(model.dtype).map_blocks(
            _map, model, d, k, False, dtype=model.dtype, chunks=(X.chunks[0], (k,))
        )

    def inverse_transform(self, X, copy=True):
        if not isinstance(X, da.Array):
            return super().inverse_transform(X, copy)
        check_is_fitted(self, "_model")
        X = _check(X)
        if X.shape[1] != self._k:
            raise ValueError(f"X has {X.shape[1]} columns, but the model has {self._k} components")
        model, d, k = self._model, self._d, self._k
        return X.astype(model.dtype).map_blocks(
            _map, model, d, k, True, dtype=model.dtype, chunks=(X.chunks[0], (d,))
        )


def _map(x, model, d, k, inverse):
    x = _aligned(x)
    if inverse:
        return _unmix.fastica_inverse(_aligned(model), d, k, x, 1)
    return _unmix.fastica_transform(_aligned(model), d, k, x, 1)


def _map_whiten(x, storage, d, k, inverse):
    return _unmix.whitener_transform(_aligned(storage), d, k, _aligned(x), inverse, 1)


class Whitener(_whitener.Whitener):
    """:class:`unmix.Whitener` over a chunked ``dask.array``: one moments pass on the workers
    (the same tree reduction, so the same bits as the in-memory fit), transforms as
    ``map_blocks``."""

    def fit(self, X, y=None):
        if not isinstance(X, da.Array):
            return super().fit(X, y)
        seed = _whitener._whiten_options(self)
        X = aligned_rows(_check(X))
        n, d = X.shape
        k = _whitener._components(self, d)
        r = _unmix.whitener_fit_remote(
            _Runner(X), d, str(X.dtype), k, self.method, self.rotation, seed, int(self.ddof),
            float(self.rank_rtol),
        )
        self.n_features_in_ = d
        _whitener._set_whitener(self, r, d, k)
        return self

    def transform(self, X):
        if not isinstance(X, da.Array):
            return super().transform(X)
        check_is_fitted(self, "_storage")
        X = _check(X)
        if X.shape[1] != self._d:
            raise ValueError(f"X has {X.shape[1]} features, but Whitener is expecting {self._d} features as input")
        s, d, k = self._storage, self._d, self._k
        return X.astype(s.dtype).map_blocks(_map_whiten, s, d, k, False, dtype=s.dtype,
                                            chunks=(X.chunks[0], (k,)))

    def inverse_transform(self, X):
        if not isinstance(X, da.Array):
            return super().inverse_transform(X)
        check_is_fitted(self, "_storage")
        X = _check(X)
        if X.shape[1] != self._k:
            raise ValueError(f"X has {X.shape[1]} columns, but the whitener has {self._k} components")
        s, d, k = self._storage, self._d, self._k
        return X.astype(s.dtype).map_blocks(_map_whiten, s, d, k, True, dtype=s.dtype,
                                            chunks=(X.chunks[0], (d,)))


