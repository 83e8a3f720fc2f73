"""kgrag.embed.exact_l2: the float32 and int8 scans return exactly the brute-force top-k.

Brute force = every row's :func:`squared_distances`, sorted by (distance, id). Data includes
duplicate rows, integer grids (many exact ties at the k-th distance), zero rows, queries that
are copies of rows, and magnitudes from 1e-3 to 1e3.
"""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag.embed import matvec, matvecs
from kgrag.embed.exact_l2 import (
    FlatL2Search,
    Int8L2Search,
    int8_available,
    squared_distances,
    top_k_order,
)

needs_numba = pytest.mark.skipif(not int8_available(), reason="the int8 scan needs numba")


def _has_vnni():
    if not int8_available():
        return False
    from kgrag.embed._int8_kernel import has_vnni

    return has_vnni()


def _has_avx2():
    if not int8_available():
        return False
    from kgrag.embed._int8_kernel import has_avx2

    return has_avx2()


needs_vnni = pytest.mark.skipif(not _has_vnni(), reason="needs AVX-512 VNNI")
needs_avx2 = pytest.mark.skipif(not _has_avx2(), reason="needs AVX2")
SEARCHES = [FlatL2Search,
            pytest.param(functools.partial(Int8L2Search, kernel="portable"), marks=needs_numba,
                         id="int8-portable"),
            pytest.param(functools.partial(Int8L2Search, kernel="avx2"), marks=needs_avx2,
                         id="int8-avx2"),
            pytest.param(functools.partial(Int8L2Search, kernel="vnni"), marks=needs_vnni,
                         id="int8-vnni")]


def brute_force(matrix, query, k):
    ids = np.arange(len(matrix))
    dist = squared_distances(matrix, ids, query)
    order = np.lexsort((ids, dist))[:k]
    return dist[order], ids[order]


def make_data(seed, n, d, mode, scale):
    rng = np.random.default_rng(seed)
    if mode == "grid":  # few distinct coordinates: many rows at exactly the same distance
        matrix = rng.integers(-2, 3, (n, d)).astype(np.float32)
    else:
        matrix = rng.standard_normal((n, d)).astype(np.float32)
    if mode == "duplicates" and n > 1:
        matrix[rng.integers(0, n, n // 2)] = matrix[rng.integers(0, n, n // 2)]
    if mode == "zeros":
        matrix[rng.integers(0, n, max(1, n // 4))] = 0.0
    matrix *= np.float32(scale)
    queries = [rng.standard_normal(d).astype(np.float32) * np.float32(scale),
               matrix[rng.integers(0, n)].copy(),
               np.zeros(d, np.float32)]
    if mode == "grid":
        queries.append(rng.integers(-2, 3, d).astype(np.float32) * np.float32(scale))
    return matrix, np.vstack(queries)


@pytest.mark.parametrize("search", SEARCHES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), d=st.integers(1, 70),
       mode=st.sampled_from(["random", "grid", "duplicates", "zeros"]),
       scale=st.sampled_from([1e-3, 1.0, 1e3]), k=st.integers(1, 320))
def test_scan_returns_exactly_the_brute_force_top_k(search, seed, n, d, mode, scale, k):
    matrix, queries = make_data(seed, n, d, mode, scale)
    index = search(matrix)
    squared, ids = index.search(queries, k)
    assert squared.shape == ids.shape == (len(queries), min(k, n))
    for row, query in enumerate(queries):
        want_dist, want_ids = brute_force(matrix, query, k)
        assert ids[row].tolist() == want_ids.tolist()
        assert squared[row].tolist() == want_dist.tolist()
    # a batch equals its queries searched one at a time
    alone = index.search(queries[1:2], k)
    assert alone[1][0].tolist() == ids[1].tolist()


@pytest.mark.parametrize("search", SEARCHES)
def test_many_ties_at_the_kth_distance_are_broken_by_id(search):
    rng = np.random.default_rng(11)
    matrix = np.repeat(rng.standard_normal((40, 16)).astype(np.float32), 50, axis=0)
    rng.shuffle(matrix)
    query = matrix[7] + np.float32(0.01)
    for k in (1, 49, 50, 51, 333, 2000):
        squared, ids = search(matrix).search(query, k)
        want_dist, want_ids = brute_force(matrix, query, k)
        assert ids[0].tolist() == want_ids.tolist() and squared[0].tolist() == want_dist.tolist()


@needs_numba
def test_int8_scan_over_threads_and_large_rows_equals_flat():
    """Large enough for the row blocks to run on two threads; 384-d like MiniLM."""
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((12_000, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.standard_normal((3, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    flat, int8 = FlatL2Search(matrix), Int8L2Search(matrix, kernel="portable")
    a, b = flat.search(queries, 700), int8.search(queries, 700)
    assert (a[0] == b[0]).all() and (a[1] == b[1]).all()
    assert all(700 <= size < 12_000 for size in int8.last_band_sizes)  # the band is a subset
    assert int8.codes.dtype == np.int8 and int8.codes.nbytes == matrix.nbytes // 4
    # the same integer products: the same bounds, bit for bit, whichever kernel the CPU runs
    for kernel in ["avx2"] * _has_avx2() + ["vnni"] * _has_vnni():
        fast = Int8L2Search(matrix, kernel=kernel)
        assert fast.codes.shape == (12_000, 384)
        c = fast.search(queries, 700)
        assert (c[0] == a[0]).all() and (c[1] == a[1]).all()
        assert fast.last_band_sizes == int8.last_band_sizes
        for count in (1, 2, 3, 4, 5, 9):  # the AVX2 kernel takes query vectors 4 at a time
            many = np.vstack([queries] * 3)[:count]
            lower, upper, _ = fast._bounds(many)
            lower2, upper2, _ = int8._bounds(many)
            assert (lower == lower2).all() and (upper == upper2).all()


@needs_avx2
def test_avx2_kernel_takes_rows_in_pairs_and_a_last_one_alone():
    """The AVX2 kernel scores two rows at a time (each query block loaded once for both):
    ranges of odd and even length, starting anywhere, and every query count give the portable
    kernel's bounds bit for bit -- every row's, and the rows each selects under a limit, up to
    a cap (the rows past it counted, not written)."""
    from kgrag.embed import _int8_kernel

    rng = np.random.default_rng(8)
    rows, dim = 301, 384
    codes = rng.integers(-127, 128, size=(rows, dim), dtype=np.int8)
    per_row = (rng.random(rows, dtype=np.float32), rng.random(rows),
               rng.random(rows, dtype=np.float32), rng.random(rows, dtype=np.float32),
               codes.sum(1, dtype=np.int32))
    portable, avx2 = _int8_kernel.load("portable"), _int8_kernel.load("avx2")
    for count in (1, 2, 3, 4, 5, 7):
        queries = rng.integers(-8000, 8000, size=(count, dim), dtype=np.int16)
        per_query = (rng.random(count), rng.random(count), rng.random(count))
        for lo, hi in ((0, rows), (1, rows), (5, 6), (7, 7), (2, 259), (3, 260)):
            every = np.full(count, np.inf, np.float32)
            got = _kernel_output(avx2, codes, per_row, queries, per_query, every, lo, hi - lo,
                                 lo, hi)
            want = _kernel_output(portable, codes, per_row, queries, per_query, every, lo,
                                  hi - lo, lo, hi)
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)  # NaN outside lo:hi in both
            if hi - lo < 3:
                continue
            # selecting: the rows under a limit, and past the cap counted but not written
            limits = np.median(want[1][:, lo:hi], axis=1).astype(np.float32)
            for cap in (hi - lo, 3):
                got = _kernel_output(avx2, codes, per_row, queries, per_query, limits, 0, cap,
                                     lo, hi)
                want_sel = _kernel_output(portable, codes, per_row, queries, per_query, limits,
                                          0, cap, lo, hi)
                for a, b in zip(got, want_sel):
                    np.testing.assert_array_equal(a, b)
                ids, lower, upper, counts = got
                for q in range(count):
                    under = lo + np.flatnonzero(want[1][q, lo:hi] <= limits[q])
                    assert counts[q] == len(under)
                    written = min(cap, len(under))
                    assert ids[q, :written].tolist() == under[:written].tolist()
                    np.testing.assert_array_equal(lower[q, :written], want[1][q, under][:written])
                    np.testing.assert_array_equal(upper[q, :written], want[2][q, under][:written])


def _kernel_output(kernel, codes, per_row, queries, per_query, limits, base, cap, lo, hi):
    """``(ids, lower, upper, counts)`` of one kernel call, NaN / -1 where nothing was written."""
    m, rows = len(queries), len(codes)
    ids = np.full((m, rows), -1, np.int64)
    lower, upper = (np.full((m, rows), np.nan, np.float32) for _ in range(2))
    counts = np.zeros(m, np.int64)
    kernel(codes, *per_row, queries, *per_query, limits, ids, lower, upper, counts, base, cap, lo,
           hi)
    return ids, lower, upper, counts


@needs_vnni
def test_vnni_kernel_pads_odd_dimensions():
    rng = np.random.default_rng(9)
    matrix = rng.standard_normal((3000, 70)).astype(np.float32)  # 70 -> two 64-byte blocks
    queries = rng.standard_normal((2, 70)).astype(np.float32)
    vnni = Int8L2Search(matrix, kernel="vnni")
    portable = Int8L2Search(matrix, kernel="portable")
    assert vnni.codes.shape == (3000, 128) and not vnni.codes[:, 70:].any()
    for got, want in zip(vnni._bounds(queries)[:2], portable._bounds(queries)[:2]):
        assert (got == want).all()
    assert vnni.search(queries, 50)[1].tolist() == portable.search(queries, 50)[1].tolist()


@needs_avx2
def test_avx2_kernel_pads_odd_dimensions():
    rng = np.random.default_rng(9)
    matrix = rng.standard_normal((3000, 70)).astype(np.float32)  # 70 -> five 16-byte blocks
    queries = rng.standard_normal((3, 70)).astype(np.float32)
    avx2 = Int8L2Search(matrix, kernel="avx2")
    portable = Int8L2Search(matrix, kernel="portable")
    assert avx2.codes.shape == (3000, 80) and not avx2.codes[:, 70:].any()
    for got, want in zip(avx2._bounds(queries)[:2], portable._bounds(queries)[:2]):
        assert (got == want).all()
    assert avx2.search(queries, 50)[1].tolist() == portable.search(queries, 50)[1].tolist()


@needs_numba
@pytest.mark.parametrize(("features", "machine", "kernel"), [
    ({"avx512vnni": True, "avx512bw": True, "avx2": True}, "x86_64", "vnni"),
    ({"avx512vnni": False, "avx512bw": True, "avx2": True}, "x86_64", "avx2"),  # no VNNI
    ({"avx2": False, "avx": True}, "x86_64", "portable"),  # no AVX2
    ({"avx512vnni": True, "avx512bw": True, "avx2": True}, "aarch64", "portable"),  # ARM
    (RuntimeError("no features"), "x86_64", "portable"),  # LLVM cannot read them
])
def test_auto_picks_the_fastest_kernel_the_cpu_runs(monkeypatch, features, machine, kernel):
    """Each fallback is what ``kernel="auto"`` builds when the CPU lacks the faster kernel's
    instructions; on another architecture LLVM's x86 features are never even asked for, and
    the x86 kernels' module is not imported. Every fallback gives the same exact answer."""
    import sys

    import llvmlite.binding

    from kgrag.embed import _int8_kernel

    monkeypatch.delenv(_int8_kernel.KERNEL_ENV, raising=False)
    monkeypatch.setattr(_int8_kernel.platform, "machine", lambda: machine)
    def host_features():
        if isinstance(features, Exception):
            raise features
        return dict(features)

    monkeypatch.setattr(llvmlite.binding, "get_host_cpu_features", host_features)
    assert _int8_kernel.best_kernel() == kernel
    if kernel == "vnni":
        return  # this CPU may not run it (it has its own test)
    if kernel == "portable":
        monkeypatch.delitem(sys.modules, "kgrag.embed._int8_x86", raising=False)
    if kernel == "avx2" and not _has_avx2():
        return
    rng = np.random.default_rng(13)
    matrix = rng.standard_normal((4000, 48)).astype(np.float32)
    queries = rng.standard_normal((2, 48)).astype(np.float32)
    index = Int8L2Search(matrix)
    assert index.kernel == kernel
    if kernel == "portable":
        assert "kgrag.embed._int8_x86" not in sys.modules
    want = FlatL2Search(matrix).search(queries, 300)
    got = index.search(queries, 300)
    assert got[1].tolist() == want[1].tolist() and got[0].tolist() == want[0].tolist()


@needs_numba
@pytest.mark.parametrize(("forced", "features", "kernel"), [
    ("portable", {"avx512vnni": True, "avx512bw": True, "avx2": True}, "portable"),
    ("AVX2", {"avx512vnni": True, "avx512bw": True, "avx2": True}, "avx2"),
    ("auto", {"avx512vnni": False, "avx2": True}, "avx2"),
    ("vnni", {"avx512vnni": False, "avx2": True}, ValueError),  # the CPU lacks it
    ("sse", {"avx2": True}, ValueError),  # no such kernel
])
def test_the_environment_picks_the_kernel(monkeypatch, forced, features, kernel):
    """``KGRAG_INT8_KERNEL`` overrides the automatic choice (an AVX2 run on an AVX-512 CPU, or a
    way round a virtual machine that traps instructions it reports), but never to a kernel the
    CPU cannot run: that is refused with the variable's name, not a crash in the first scan."""
    import llvmlite.binding

    from kgrag.embed import _int8_kernel

    monkeypatch.setenv(_int8_kernel.KERNEL_ENV, forced)
    monkeypatch.setattr(_int8_kernel.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(llvmlite.binding, "get_host_cpu_features", lambda: dict(features))
    if kernel is ValueError:
        with pytest.raises(ValueError, match="KGRAG_INT8_KERNEL"):
            _int8_kernel.best_kernel()
        return
    assert _int8_kernel.best_kernel() == kernel
    if kernel == "portable":
        index = Int8L2Search(np.eye(8, dtype=np.float32))
        assert index.kernel == "portable"


def test_without_numba_the_automatic_index_is_the_exact_float32_scan(monkeypatch):
    """No numba (the ``fast`` extra missing): ``index="auto"`` falls back to the float32 scan,
    with the same candidates the int8 scan gives."""
    from kgrag.embed import exact_l2
    from kgrag.methods.simgrag import candidates

    rng = np.random.default_rng(14)
    matrix = rng.standard_normal((3000, 32)).astype(np.float32)
    queries = rng.standard_normal((2, 32)).astype(np.float32)
    monkeypatch.setattr(exact_l2, "int8_available", lambda: False)
    fallback = candidates.NameIndex(matrix, hnsw_threshold=1000, expected_k=2000)
    assert fallback.kind == "flat"
    got = fallback.search(queries, 2000)
    if int8_available():
        monkeypatch.undo()
        int8 = candidates.NameIndex(matrix, hnsw_threshold=1000, expected_k=2000)
        assert int8.kind == "int8"
        want = int8.search(queries, 2000)
    else:
        want = candidates.NameIndex(matrix, index="flat").search(queries, 2000)
    for a, b in zip(got, want):
        assert a.ids.tolist() == b.ids.tolist() and a.distances.tolist() == b.distances.tolist()


@needs_numba
def test_the_residual_bound_is_what_keeps_the_int8_scan_exact():
    """Without the stored residual norms the int8 ranking alone loses true neighbours."""
    rng = np.random.default_rng(4)
    matrix = rng.standard_normal((5000, 64)).astype(np.float32)
    query = rng.standard_normal(64).astype(np.float32)
    want = brute_force(matrix, query, 200)[1]
    index = Int8L2Search(matrix, kernel="portable")
    assert index.search(query, 200)[1][0].tolist() == want.tolist()
    index.residuals[:] = 0.0
    assert index.search(query, 200)[1][0].tolist() != want.tolist()


def test_squared_distances_do_not_depend_on_the_other_rows():
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((3000, 37)).astype(np.float32)
    query = rng.standard_normal(37).astype(np.float32)
    everything = squared_distances(matrix, np.arange(3000), query)
    subset = rng.permutation(3000)[:1234]
    assert squared_distances(matrix, subset, query).tolist() == everything[subset].tolist()
    exact = ((matrix.astype(np.float64) - query) ** 2).sum(axis=1)
    assert np.allclose(everything, exact, rtol=1e-5)


def test_matvecs_is_one_pass_of_matvec_per_vector():
    rng = np.random.default_rng(6)
    matrix = rng.standard_normal((5001, 24)).astype(np.float32)
    vectors = rng.standard_normal((3, 24)).astype(np.float32)
    out = matvecs(matrix, vectors)
    assert out.shape == (3, 5001)
    for row in range(3):
        assert np.allclose(out[row], matvec(matrix, vectors[row]), atol=1e-5)
    with pytest.raises(ValueError, match="matvecs needs"):
        matvecs(matrix, vectors[:, :5])
    into = np.empty((3, 5001), np.float32)
    assert matvecs(matrix, vectors, out=into) is into and np.array_equal(into, out)
    with pytest.raises(ValueError, match="out must be"):
        matvecs(matrix, vectors, out=np.empty((2, 5001), np.float32))


@pytest.mark.parametrize("search", SEARCHES)
def test_scratch_buffers_are_reused_and_grow(search):
    rng = np.random.default_rng(8)
    matrix = rng.standard_normal((2000, 16)).astype(np.float32)
    queries = rng.standard_normal((4, 16)).astype(np.float32)
    index = search(matrix)
    first = index.search(queries[:1], 10)
    kept = dict(vars(index._scratch))
    assert kept and all(a.size >= 2000 for a in kept.values())  # (m, n) arrays
    assert index.search(queries[:1], 10)[1].tolist() == first[1].tolist()
    assert all(vars(index._scratch)[name] is a for name, a in kept.items())  # none new
    both = index.search(queries, 10)  # more query vectors: the buffers grow
    assert all(vars(index._scratch)[name].size >= 4 * 2000 for name in kept)
    assert both[1][0].tolist() == first[1][0].tolist()
    assert index.search(queries[2:3], 10)[1][0].tolist() == both[1][2].tolist()


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="matrix"):
        FlatL2Search(np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="dimension"):
        FlatL2Search(np.zeros((5, 3), np.float32)).search(np.zeros(4, np.float32), 2)
    assert FlatL2Search(np.zeros((5, 3), np.float32)).search(np.zeros((0, 3)), 2)[1].shape == (0, 2)


@pytest.mark.parametrize("values", ["random", "ties", "zeros", "tiny"])
def test_top_k_order_is_a_stable_sort(values):
    rng = np.random.default_rng(12)
    dist = {"random": rng.random(50_000), "ties": rng.integers(0, 30, 50_000),
            "zeros": np.zeros(9000), "tiny": rng.random(7)}[values].astype(np.float32)
    for k in (1, 5, len(dist) // 3, len(dist)):
        want = np.lexsort((np.arange(len(dist)), dist))[:k]
        assert top_k_order(dist, k).tolist() == want.tolist()


@needs_numba
@pytest.mark.parametrize(("target", "kernel"), [
    ("", "vnni"),  # unset: the host's features
    ("+avx2,+fma,-avx512f,-avxvnni", "avx2"),  # an AVX2 build (benchmarks/as_avx2.sh)
    ("+sse4.2,-avx2", "portable"),
    ("+avx2,+avx512bw,+avx512vnni", "vnni"),
])
def test_numba_target_features_narrow_the_kernel_choice(monkeypatch, target, kernel):
    """With ``NUMBA_CPU_FEATURES`` set numba compiles for that list, not the host's: a kernel
    whose instructions it leaves out is not chosen (it would fail to compile), and a feature it
    names that the host lacks is not assumed either."""
    import llvmlite.binding

    from kgrag.embed import _int8_kernel

    monkeypatch.delenv(_int8_kernel.KERNEL_ENV, raising=False)
    monkeypatch.setenv(_int8_kernel.NUMBA_FEATURES_ENV, target)
    monkeypatch.setattr(_int8_kernel.platform, "machine", lambda: "x86_64")
    host = {"avx2": True, "fma": True, "sse4.2": True, "avx512bw": True, "avx512vnni": True}
    monkeypatch.setattr(llvmlite.binding, "get_host_cpu_features", lambda: dict(host))
    assert _int8_kernel.best_kernel() == kernel
    host["avx512vnni"] = False  # named by the target but missing on the host
    assert _int8_kernel.best_kernel() == ("avx2" if kernel == "vnni" else kernel)


@needs_numba
@pytest.mark.parametrize("kernel", ["portable", *["avx2"] * _has_avx2(), *["vnni"] * _has_vnni()])
@pytest.mark.parametrize("mislead", [None, "rank", "cap", "order"])
def test_int8_search_selects_its_band_from_a_sample(monkeypatch, kernel, mislead):
    """Above ``4 * SAMPLE_ROWS`` rows the int8 search keeps only the rows under a limit set from
    a strided sample (no full-length bounds arrays). Its answer and band are the full scan's,
    and when the sample misleads -- a limit under the k-th upper bound (``rank``), more rows
    than the room made for them (``cap``), or rows ordered so that the sample sees only the
    nearest ones (``order``) -- the query is scanned again in full, still exact."""
    from kgrag.embed import exact_l2

    monkeypatch.setattr(exact_l2, "SAMPLE_ROWS", 500)
    rng = np.random.default_rng(21)
    matrix = rng.standard_normal((12_000, 64)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    queries = rng.standard_normal((3, 64)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    if mislead == "rank":
        monkeypatch.setattr(exact_l2, "sample_rank", lambda expected: 0)
    elif mislead == "cap":
        monkeypatch.setattr(exact_l2, "CAP_SLACK", 0.0)
        monkeypatch.setattr(exact_l2, "CAP_MIN", 1)
    elif mislead == "order":  # the sample sees only rows nearest query 0: its limit is low
        sampled = np.arange(0, len(matrix), len(matrix) // 500)
        by_distance = np.argsort(((matrix - queries[0]) ** 2).sum(1), kind="stable")
        order = np.empty(len(matrix), np.int64)
        order[sampled] = by_distance[:len(sampled)]
        order[np.setdiff1d(np.arange(len(matrix)), sampled)] = by_distance[len(sampled):]
        matrix = matrix[order]
    flat, int8 = FlatL2Search(matrix), Int8L2Search(matrix, kernel=kernel)
    for k in (1, 50, 300):
        want = flat.search(queries, k)
        got = int8.search(queries, k)
        assert got[1].tolist() == want[1].tolist() and got[0].tolist() == want[0].tolist()
        selected = list(int8.last_band_sizes)
        if mislead is None:
            assert int8.last_full_scans == 0
        elif mislead == "cap" or (mislead == "rank" and k == 300):
            assert int8.last_full_scans == 3
        elif mislead == "order" and k >= 50:
            assert int8.last_full_scans >= 1
        # the bands are those of the full scan
        monkeypatch.setattr(exact_l2, "SAMPLE_ROWS", 10**9)
        int8.search(queries, k)
        assert int8.last_full_scans == 3 and int8.last_band_sizes == selected
        monkeypatch.setattr(exact_l2, "SAMPLE_ROWS", 500)


def test_a_band_is_taken_from_kept_rows_only_when_they_must_hold_it():
    """:func:`band_under_limit`: the kept rows (``lower <= limit``) give the band only if ``k`` of
    them have their upper bound under the limit too, and the cut is not above the limit."""
    from kgrag.embed.exact_l2 import band_under_limit

    upper = np.arange(10, dtype=np.float32)
    lower = upper - np.float32(1)
    ids = np.arange(10) * 7
    kept = lower <= 6  # what a scan with limit 6 keeps
    args = (ids[kept], lower[kept], upper[kept])
    # k-th (3rd) smallest upper bound 2; cut 2 + 3 = 5 <= 6: rows with lower <= 5
    band = band_under_limit(*args, np.float32(6), 3, lambda top: np.float32(top + 3))
    assert band.tolist() == ids[lower <= 5].tolist()
    # a cut above the limit: rows with lower in (6, 7] were not kept
    assert band_under_limit(*args, np.float32(6), 3, lambda top: np.float32(top + 5)) is None
    # only 2 kept rows under a limit of 1.5: the 3rd smallest upper bound may be anywhere
    kept = lower <= 1.5
    assert band_under_limit(ids[kept], lower[kept], upper[kept], np.float32(1.5), 3,
                            lambda top: np.float32(top)) is None


@pytest.mark.parametrize("compiled", [True, False])
def test_the_metric_with_and_without_numba(monkeypatch, compiled):
    """:func:`squared_distances` is a compiled loop with numba and numpy's einsum without it:
    within the metric's error bound of each other, each deterministic per row, and both
    searches exact under either (the band is re-scored with the same routine)."""
    from kgrag.embed import exact_l2

    if compiled and not int8_available():
        pytest.skip("needs numba")
    rng = np.random.default_rng(5)
    matrix = rng.standard_normal((6000, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    ids = rng.permutation(6000)[:4000]
    with_numba = squared_distances(matrix, ids, query)
    monkeypatch.setattr(exact_l2, "_compiled_rows", lambda: None)
    plain = squared_distances(matrix, ids, query)
    if int8_available():
        rel = np.abs(with_numba.astype(np.float64) - plain) / plain
        assert rel.max() <= 2 * exact_l2.gamma(386)
    if compiled:
        monkeypatch.undo()
    got = squared_distances(matrix, ids, query, parallel=False)
    assert got.tolist() == (with_numba if compiled else plain).tolist()
    reversed_ids = squared_distances(matrix, ids[::-1], query)[::-1]
    assert reversed_ids.tolist() == got.tolist()
    searches = [FlatL2Search(matrix)] + [Int8L2Search(matrix)] * int8_available()
    want_dist, want_ids = brute_force(matrix, query, 300)
    for index in searches:
        dist, found = index.search(query, 300)
        assert found[0].tolist() == want_ids.tolist() and dist[0].tolist() == want_dist.tolist()
    with pytest.raises(IndexError, match="row ids"):
        squared_distances(matrix, np.array([6000]), query)


@needs_numba
def test_the_room_for_kept_rows_is_per_part_the_scan_really_uses(monkeypatch):
    """The room made for each part's kept rows divides the sample's estimate by the number of
    parts the scan is cut into -- on a many-core machine fewer than four per thread when the
    rows are few -- so no part runs out of room and no query is scanned again."""
    from kgrag.embed import exact_l2

    monkeypatch.setattr(exact_l2, "SAMPLE_ROWS", 500)
    monkeypatch.setattr(exact_l2, "CAP_MIN", 1)
    monkeypatch.setattr(exact_l2, "workers", lambda: 64)  # 256 parts wanted, 2 possible
    rng = np.random.default_rng(23)
    matrix = rng.standard_normal((12_000, 128)).astype(np.float32)
    queries = rng.standard_normal((3, 128)).astype(np.float32)
    int8 = Int8L2Search(matrix, kernel="portable")
    got = int8.search(queries, 300)
    assert int8._scan_parts(len(matrix), 3) == 2
    assert int8.last_full_scans == 0
    want = FlatL2Search(matrix).search(queries, 300)
    assert got[1].tolist() == want[1].tolist() and got[0].tolist() == want[0].tolist()
