"""unmix.dask on a distributed.LocalCluster of 2 worker processes: the same bits as the
in-memory fit, data never gathered, a worker memory limit below the data's size."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import unmix
import unmix.dask
from conftest import mixed


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as c:
        assert len(c.scheduler_info()["workers"]) == 2
        yield c


def same_model(a, b):
    return (
        a._model.dtype == b._model.dtype
        and np.array_equal(a._model, b._model)
        and a.n_iter_ == b.n_iter_
    )


N = 5 * 4096 + 123  # five whole chunks of the core and a short one


@pytest.mark.parametrize("rows_per_block", [4096, 3 * 4096, 5000, 1000])
def test_dask_fit_equals_the_in_memory_fit_bit_for_bit(client, rows_per_block):
    _, x = mixed(n=N, k=4, seed=1)
    ref = unmix.FastICA(random_state=0).fit(x)
    with distributed.get_task_stream(client) as ts:
        est = unmix.dask.FastICA(random_state=0).fit(da.from_array(x, chunks=(rows_per_block, 4)))
    assert same_model(est, ref)
    assert est.n_passes_ == ref.n_iter_ + 2  # moments, iterations, sources' moments
    if rows_per_block <= 5000:
        # Several blocks per pass: the block tasks ran on both workers.
        workers = {t["worker"] for t in ts.data if str(t["key"]).startswith("_block")}
        assert len(workers) == 2


@pytest.mark.parametrize(
    "params",
    [
        dict(algorithm="deflation", fun="exp"),
        dict(fun="cube", whiten="arbitrary-variance", canonical=True),
        dict(n_components=2, fun_args={"alpha": 1.5}),
    ],
)
def test_dask_fit_options_and_float32(client, params):
    _, x = mixed(n=3 * 4096, k=4, seed=2)
    for data in (x, x.astype(np.float32)):
        ref = unmix.FastICA(random_state=1, **params).fit(data)
        est = unmix.dask.FastICA(random_state=1, **params).fit(da.from_array(data, chunks=(4096, 4)))
        assert same_model(est, ref)


def test_dask_fit_without_whitening(client):
    _, x = mixed(n=2 * 4096, k=3, seed=3)
    z = unmix.Whitener().fit_transform(x)
    ref = unmix.FastICA(random_state=0, whiten=False).fit(z)
    est = unmix.dask.FastICA(random_state=0, whiten=False).fit(da.from_array(z, chunks=(2048, 3)))
    assert same_model(est, ref)


def test_transforms_are_map_blocks(client):
    _, x = mixed(n=3 * 4096, k=3, seed=4)
    est = unmix.dask.FastICA(random_state=0).fit(da.from_array(x, chunks=(4096, 3)))
    dx = da.from_array(x, chunks=(3000, 3))
    s = est.transform(dx)
    assert isinstance(s, da.Array) and s.chunks[0] == dx.chunks[0]
    assert np.array_equal(s.compute(), est.transform(x))
    assert np.array_equal(est.inverse_transform(s).compute(), est.inverse_transform(est.transform(x)))


@pytest.mark.parametrize("params", [dict(), dict(method="zca", ddof=1), dict(n_components=2, rotation="random", random_state=3)])
def test_dask_whitener_equals_the_in_memory_whitener(client, params):
    _, x = mixed(n=N, k=3, seed=5)
    ref = unmix.Whitener(**params).fit(x)
    est = unmix.dask.Whitener(**params).fit(da.from_array(x, chunks=(7000, 3)))
    assert np.array_equal(est._storage, ref._storage)
    assert est.n_samples_ == N
    z = est.transform(da.from_array(x, chunks=(7000, 3))).compute()
    assert np.array_equal(z, ref.transform(x))


def test_dask_bad_input(client):
    _, x = mixed(n=3 * 4096, k=3, seed=6)
    with pytest.raises(ValueError, match="chunked along features"):
        unmix.dask.FastICA().fit(da.from_array(x, chunks=(4096, 2)))
    with pytest.raises(ValueError, match="chunked along features"):
        unmix.dask.Whitener().fit(da.from_array(x, chunks=(4096, 1)))
    bad = x.copy()
    bad[5000, 1] = np.nan
    with pytest.raises(ValueError, match="row 5000, column 1"):
        unmix.dask.FastICA().fit(da.from_array(bad, chunks=(4096, 3)))
    with pytest.raises(ValueError, match="2-D"):
        unmix.dask.FastICA().fit(da.from_array(x[:, 0], chunks=4096))
    with pytest.raises(TypeError, match="real numbers"):
        unmix.dask.FastICA().fit(da.from_array(x.astype(complex), chunks=(4096, 3)))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        unmix.dask.FastICA().transform(da.from_array(x, chunks=(4096, 3)))
    est = unmix.dask.FastICA(random_state=0).fit(da.from_array(x, chunks=(4096, 3)))
    with pytest.raises(ValueError, match="features"):
        est.transform(da.from_array(x[:, :2], chunks=(4096, 2)))


def _block(rows, d, seed, block_id=None):
    """Rows of a block, generated on the worker: uniform sources through a fixed mixing."""
    rng = np.random.default_rng([seed, block_id[0]])
    s = rng.random((rows, d), dtype=np.float32) - 0.5
    mix = np.random.default_rng(seed).standard_normal((d, d)).astype(np.float32)
    return s @ mix


def test_fit_completes_with_a_worker_memory_limit_below_the_data_size():
    rows, d, blocks = 64 * 4096, 16, 24  # 24 blocks of 16 MiB: 384 MiB of float32
    limit = 300 * 2**20
    x = da.map_blocks(
        _block, rows, d, 11, chunks=((rows,) * blocks, (d,)), dtype=np.float32,
        meta=np.empty((0, d), np.float32),
    )
    assert x.nbytes > limit
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, memory_limit=limit,
        dashboard_address=":0",
    ) as cluster, distributed.Client(cluster) as c:
        est = unmix.dask.FastICA(n_components=4, random_state=0, tol=1e-3, max_iter=20).fit(x)
        assert est.components_.shape == (4, d)
        assert np.all(np.isfinite(est.components_))
        # Workers stayed within their limit: none was restarted.
        assert len(c.scheduler_info()["workers"]) == 2
        peaks = c.run(lambda dask_worker: dask_worker.monitor.range_query(start=0)["memory"], )
        print("worker memory peaks (MiB):", [max(v) // 2**20 for v in peaks.values()], "limit", limit // 2**20)
        assert all(max(v) < limit for v in peaks.values())
        # The sources of a block are white: unit variance, uncorrelated.
        s = est.transform(x[: 4 * 4096]).compute()
        assert np.abs(np.cov(s, rowvar=False) - np.eye(4)).max() < 0.05
