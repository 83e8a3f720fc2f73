"""``load_graph(path, mmap=True)``: the arrays are mapped read-only from the saved
files, the graph answers exactly as a normal load, damaged files are typed errors, and two
processes that map one saved graph share its pages."""

from __future__ import annotations

import multiprocessing as mp
import os
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag import KnowledgeGraph
from kgrag.errors import GraphLoadError
from kgrag.graph import load_graph, save_graph
from kgrag.graph.checksums import refresh_checksums

ARRAYS = ("heads", "rels", "tails", "out_indptr", "out_key", "in_indptr", "in_order", "in_key")

triples = st.lists(
    st.tuples(st.sampled_from("abcdefgh"), st.sampled_from(["r", "s", "t"]),
              st.sampled_from("abcdefghij")),
    min_size=1, max_size=40)


def is_mapped(arr: np.ndarray) -> bool:
    """The array's memory is a file mapping (the view's base chain ends in ``mmap.mmap``)."""
    import mmap

    base = arr
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None) if not isinstance(base, memoryview) else base.obj
    return isinstance(base, mmap.mmap)


def same_answers(a: KnowledgeGraph, b: KnowledgeGraph) -> None:
    names = a.node_names
    assert b.node_names == names and b.relation_names == a.relation_names
    assert b.node_index == a.node_index
    for direction in ("out", "in", "both"):
        for name in names:
            assert b.one_hop([name], direction=direction) == a.one_hop([name], direction=direction)
        assert b.one_hop(names[:3], direction=direction) == a.one_hop(names[:3],
                                                                      direction=direction)
        assert b.degree(names, direction=direction) == a.degree(names, direction=direction)
    for rel in a.relation_names:
        path = f"{rel} -> {a.relation_names[0]}_inv"
        assert b.follow_path(names, path) == a.follow_path(names, path)
    assert b.shortest_paths(names[:2], names[-2:]) == a.shortest_paths(names[:2], names[-2:])
    assert b.k_hop_subgraph(names[:1], hops=2) == a.k_hop_subgraph(names[:1], hops=2)
    assert list(b.triples()) == list(a.triples())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=triples, index=st.booleans())
def test_a_mapped_load_equals_a_normal_load(tmp_path_factory, rows, index):
    folder = tmp_path_factory.mktemp("g") / "g"
    kg = KnowledgeGraph.from_triples(rows, aliases={rows[0][0]: ["alias"]},
                                     relation_labels={rows[0][1]: "a label"})
    save_graph(kg, folder, index=index)
    plain, mapped = load_graph(folder), load_graph(folder, mmap=True)
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(mapped, name), getattr(plain, name))
        assert getattr(mapped, name).dtype == getattr(plain, name).dtype
    assert is_mapped(mapped.heads) and not mapped.heads.flags.writeable
    assert is_mapped(mapped.in_key) == index  # an index-less save builds it in the process
    assert mapped.aliases == plain.aliases and mapped.counts() == plain.counts()
    assert mapped.relation_labels == plain.relation_labels == {rows[0][1]: ["a label"]}
    assert mapped.stats["self_loops"] == plain.stats["self_loops"]
    same_answers(plain, mapped)
    if index:  # the single-node adjacency rows are mapped too, and equal the built ones
        ptr, rows_ = mapped._adj_tables
        built_ptr, built_rows = plain._adjacency_rows()
        assert is_mapped(rows_)
        np.testing.assert_array_equal(ptr, built_ptr)
        np.testing.assert_array_equal(rows_, built_rows)


def test_empty_graph_and_old_saves(tmp_path):
    empty = KnowledgeGraph.from_triples([])
    save_graph(empty, tmp_path / "empty")
    assert load_graph(tmp_path / "empty", mmap=True).counts() == empty.counts()


@pytest.fixture
def saved(tmp_path):
    rows = [(f"n{i}", f"r{i % 3}", f"n{(i * 7 + 1) % 50}") for i in range(200)]
    rows.append(("n5", "r0", "n5"))  # a self-loop
    save_graph(KnowledgeGraph.from_triples(rows), tmp_path / "g")
    return tmp_path / "g"


def rewrite(path, mutate):
    """Change a saved array and its checksum (the structural checks must still refuse it)."""
    arr = np.load(path)
    arr = mutate(arr.copy())
    np.save(path, arr)
    refresh_checksums(path.parent)


@pytest.mark.parametrize("name, mutate, message", [
    ("tails", lambda a: a.astype(np.float64), "not integers"),
    ("heads", lambda a: a[:-1], "expected"),
    ("rels", lambda a: np.full_like(a, 99), "outside the name tables"),
    ("heads", lambda a: a[::-1].copy(), "not sorted"),
    ("out_key", lambda a: a + 1, "out_key.npy does not match"),
    ("in_order", lambda a: np.roll(a, 1), "in_key.npy does not match|in_order"),
    ("in_indptr", lambda a: np.where(np.arange(len(a)) == len(a) // 2, a + 1, a), "in_indptr.npy"),
    ("out_indptr", lambda a: a.astype(np.int32), "expected"),
    ("adj_rows", lambda a: a[::-1].copy(), "adj_rows.npy"),
    ("adj_ptr", lambda a: np.maximum(a - 1, 0), "adj_ptr.npy"),
])
def test_damaged_arrays_are_typed_errors(saved, name, mutate, message):
    rewrite(saved / f"{name}.npy", mutate)
    with pytest.raises(GraphLoadError, match=message):
        load_graph(saved, mmap=True)


def test_headers_that_lie_about_the_size_are_refused_before_mapping(saved):
    path = saved / "in_key.npy"
    data = path.read_bytes()
    path.write_bytes(data[:-8])  # truncated: mapping it would fault on the last page
    refresh_checksums(saved)  # past the size check of the manifest, to the header's
    with pytest.raises(GraphLoadError, match="truncated or corrupted"):
        load_graph(saved, mmap=True)
    # a header claiming 10**11 elements: refused from the file size, nothing allocated
    header = np.lib.format.header_data_from_array_1_0(np.zeros(3, np.int32))
    header["shape"] = (10**11,)
    with open(saved / "heads.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, header)
        fh.write(struct.pack("<3i", 0, 1, 2))
    refresh_checksums(saved)
    with pytest.raises(GraphLoadError, match="header promises"):
        load_graph(saved, mmap=True)


def test_a_fifo_is_refused_not_waited_on(saved):
    os.remove(saved / "rels.npy")
    os.mkfifo(saved / "rels.npy")
    with pytest.raises(GraphLoadError, match="not a regular file"):
        load_graph(saved, mmap=True)


def test_saving_over_a_mapped_graph_keeps_the_old_mapping_readable(saved):
    mapped = load_graph(saved, mmap=True)
    before = mapped.one_hop(["n5"])
    save_graph(KnowledgeGraph.from_triples([("x", "r", "y")]), saved)  # renamed into place
    assert mapped.one_hop(["n5"]) == before  # the unlinked files stay mapped
    assert load_graph(saved, mmap=True).counts() == {"nodes": 2, "edges": 1,
                                                             "relations": 1}


# ---------------------------------------------------------------------------- two processes
def _mapping_kb(path: str) -> dict[str, int]:
    """``Rss`` / ``Pss`` / ``Shared`` (kB) of this process's mapping of ``path`` (``Shared``:
    pages also mapped by another process; dirty while the new file is not yet written back)."""
    fields: dict[str, int] = {}
    with open("/proc/self/smaps", encoding="utf-8") as fh:
        inside = False
        for line in fh:
            if "-" in line.split(" ", 1)[0] and len(line.split()) >= 5:  # a mapping header
                inside = line.rstrip().endswith(path)
            elif inside and line.split(":")[0] in ("Rss", "Pss", "Shared_Clean", "Shared_Dirty"):
                key, value = line.split(":")
                key = key.split("_")[0]
                fields[key] = fields.get(key, 0) + int(value.split()[0])
    return fields


def _answers(kg: KnowledgeGraph) -> list:
    names = kg.node_names[:20]
    return [repr(kg.one_hop([n])) for n in names] + [repr(kg.follow_path(names, "r0 -> r1"))]


def _child(folder: str, conn) -> None:
    kg = load_graph(folder, mmap=True)
    int(np.asarray(kg.in_key).sum())  # touch every page
    conn.send((_answers(kg), _mapping_kb(os.path.join(folder, "in_key.npy"))))
    conn.recv()  # keep the mapping until the parent has looked


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs Linux /proc")
def test_two_processes_see_the_same_graph_and_share_its_pages(tmp_path):
    rng = np.random.default_rng(0)
    n, e = 5_000, 60_000
    heads, tails = rng.integers(0, n, e), rng.integers(0, n, e)
    kg = KnowledgeGraph.from_arrays(heads, rng.integers(0, 4, e), tails,
                                    [f"n{i}" for i in range(n)], ["r0", "r1", "r2", "r3"])
    folder = str(tmp_path / "g")
    save_graph(kg, folder)
    mapped = load_graph(folder, mmap=True)
    int(np.asarray(mapped.in_key).sum())
    ctx = mp.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    child = ctx.Process(target=_child, args=(folder, child_end))
    child.start()
    try:
        assert parent_end.poll(60), "the child process did not answer"
        answers, child_kb = parent_end.recv()
        mine = _mapping_kb(os.path.join(folder, "in_key.npy"))
    finally:
        parent_end.send("done")
        child.join(30)
    assert child.exitcode == 0
    assert answers == _answers(mapped) == _answers(kg)
    size_kb = os.path.getsize(os.path.join(folder, "in_key.npy")) // 1024
    # both processes map every page of the file, and each page is counted half in each Pss
    assert child_kb["Rss"] >= size_kb - 4 and mine["Rss"] >= size_kb - 4
    assert child_kb["Shared"] >= size_kb - 4 and mine["Shared"] >= size_kb - 4, (child_kb, mine)
    assert child_kb["Pss"] <= child_kb["Rss"] * 0.6


# ---------------------------------------------------------------------------- vectors and FAISS
def _mapped_files() -> str:
    with open("/proc/self/maps", encoding="utf-8") as fh:
        return fh.read()


@pytest.mark.parametrize("hnsw_threshold", [10**9, 10])  # exact flat index, HNSW graph
def test_a_faiss_index_loads_mapped_with_the_same_answers(tmp_path, hnsw_threshold):
    from kgrag.embed.vector_index import VectorIndex

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((500, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    path = tmp_path / "names.faiss"
    VectorIndex.build(vectors, hnsw_threshold=hnsw_threshold).save(path)
    plain, mapped = VectorIndex.load(path), VectorIndex.load(path, mmap=True)
    assert mapped.kind == plain.kind and len(mapped) == 500
    for got, want in zip(mapped.search(vectors[:20], 5), plain.search(vectors[:20], 5)):
        np.testing.assert_array_equal(got, want)
    assert str(path) in _mapped_files()  # the stored vectors are a file mapping
    path.write_bytes(path.read_bytes()[:200])  # truncated: a typed error, not a crash
    with pytest.raises(GraphLoadError):
        VectorIndex.load(path, mmap=True)
    os.remove(path)
    os.mkfifo(path)
    with pytest.raises(GraphLoadError, match="no vector index"):
        VectorIndex.load(path, mmap=True)


def test_cached_name_vectors_are_mapped_read_only(tmp_path):
    from kgrag.embed.store import VectorStore

    store = VectorStore(tmp_path)
    vectors = np.random.default_rng(1).random((300, 8), dtype=np.float32)
    store.save("k", vectors)
    loaded = store.load("k", 300)
    np.testing.assert_array_equal(loaded, vectors)
    assert is_mapped(loaded) and not loaded.flags.writeable
    data, _ = store.paths("k")
    data.write_bytes(data.read_bytes()[:-100])  # shorter than its header says: recomputed
    assert store.load("k", 300) is None


# ---------------------------------------------------------------------------- issue 30, 10 / 11a
def _flip(path, position: int, bit: int = 0) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 1 << bit
    path.write_bytes(bytes(data))


def _as_version_1(folder) -> None:
    """Rewrite the manifest as an older kgrag wrote it: version 1, no checksums."""
    import json

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest.pop("checksums", None)
    (folder / "manifest.json").write_text(json.dumps({**manifest, "version": 1}),
                                          encoding="utf-8")


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("checksums", [True, False], ids=["v2", "v1-no-checksums"])
def test_a_flipped_bit_in_an_npy_header_length_is_a_typed_error(saved, mmap, checksums):
    # bytes 8-9 of a version 1.0 .npy hold the header length; this flip makes numpy fall back
    # to its tokenize-based header parser, which raised tokenize.TokenError
    if not checksums:
        _as_version_1(saved)
    _flip(saved / "heads.npy", 8, 6)
    with pytest.raises(GraphLoadError):
        load_graph(saved, mmap=mmap)


@pytest.mark.parametrize("name", ["heads", "rels", "tails"])
def test_edge_order_is_checked_without_mmap_too(tmp_path, name):
    """A damaged edge array that the constructor would sort into a different graph."""
    saved = tmp_path / "g"
    save_graph(KnowledgeGraph.from_triples([(f"h{i // 6}", f"r{i // 3 % 2}", f"t{i}")
                                 for i in range(24)]), saved)
    _as_version_1(saved)  # no checksum: the structural check alone must refuse it
    arr = np.load(saved / f"{name}.npy")
    i, j = (5, 6) if name == "heads" else (6, 11)  # ids stay in range, the order breaks
    arr[[i, j]] = arr[[j, i]]
    assert not np.array_equal(arr, np.load(saved / f"{name}.npy"))
    np.save(saved / f"{name}.npy", arr)
    for mmap in (False, True):
        with pytest.raises(GraphLoadError, match="not sorted"):
            load_graph(saved, mmap=mmap)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("name", ["nodes.json", "relations.json", "extras.json", "heads.npy",
                                  "in_key.npy", "adj_rows.npy"])
def test_a_flipped_character_is_refused_by_the_checksum(tmp_path, name, mmap):
    kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon"),
                                      ("Tokyo Godfathers", "directed_by", "Satoshi Kon")],
                                     node_descriptions={"Paprika": "a 2006 film"})
    save_graph(kg, tmp_path / "g")
    path = tmp_path / "g" / name
    data = path.read_bytes()
    # a letter of a name / description (same length, still valid JSON), or the last data byte
    position = data.rfind(b"Paprika") + 1 if name.endswith(".json") and b"Paprika" in data \
        else data.rfind(b"directed") + 1 if b"directed" in data else len(data) - 1
    _flip(path, position, 0)
    if not mmap and name in ("in_key.npy", "adj_rows.npy"):  # not read: the same graph loads
        assert list(load_graph(tmp_path / "g").triples()) == list(kg.triples())
        return
    # a mapped load checks every array element against the saved index instead of a digest
    message = None if mmap and name.endswith(".npy") else "checksum"
    with pytest.raises(GraphLoadError, match=message):
        load_graph(tmp_path / "g", mmap=mmap)


def test_old_saves_without_checksums_load_with_a_warning(saved, caplog):
    want = load_graph(saved)
    _as_version_1(saved)
    with caplog.at_level("WARNING"):
        for mmap in (False, True):
            assert list(load_graph(saved, mmap=mmap).triples()) == list(want.triples())
    assert "without checksums" in caplog.text


def test_a_checksum_missing_for_a_file_the_load_reads_is_refused(saved):
    import json

    manifest = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    del manifest["checksums"]["nodes.json"]
    (saved / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(GraphLoadError, match="no checksum"):
        load_graph(saved)


# ---------------------------------------------------------------------------- issue 30, item 11
def _served(tmp_path):
    """A mapped graph (checked on every call) and a second saved graph with the same shape."""
    rows = [(f"n{i}", f"r{i % 3}", f"n{(i * 7 + 1) % 50}") for i in range(200)]
    save_graph(KnowledgeGraph.from_triples(rows), tmp_path / "served")
    other = [(f"n{i}", f"r{(i + 1) % 3}", f"n{(i * 7 + 1) % 50}") for i in range(200)]
    save_graph(KnowledgeGraph.from_triples(other), tmp_path / "new")
    saved_at = time.time() - 60  # saved a minute ago (timestamps are coarser than the test)
    for name in os.listdir(tmp_path / "served"):
        os.utime(tmp_path / "served" / name, (saved_at, saved_at))
    mapped = load_graph(tmp_path / "served", mmap=True)
    mapped._mapped_files.interval = 0
    return mapped, tmp_path / "served", tmp_path / "new"


def _copy_in_place(source, target, names):
    """What ``cp new/* served/`` does: open each existing file, truncate it, write."""
    for name in names:
        with open(target / name, "r+b") as fh:
            fh.truncate(0)
            fh.write((source / name).read_bytes())


def test_a_same_size_rewrite_in_place_is_detected_not_answered(tmp_path):
    mapped, served, new = _served(tmp_path)
    before = mapped.one_hop(["n5"])
    assert (served / "rels.npy").stat().st_size == (new / "rels.npy").stat().st_size
    _copy_in_place(new, served, ["rels.npy", "out_key.npy", "in_key.npy", "adj_rows.npy"])
    assert load_graph(new).one_hop(["n5"]) != before  # the answers would differ
    for query in (lambda: mapped.one_hop(["n5"]), lambda: mapped.follow_path(["n5"], "r2"),
                  lambda: mapped.neighbors_ids(np.array([5])), lambda: list(mapped.triples())):
        with pytest.raises(GraphLoadError, match="rewritten in place"):
            query()


def test_a_rewrite_that_restores_the_mtime_is_detected(tmp_path):
    mapped, served, new = _served(tmp_path)
    info = os.stat(served / "rels.npy")
    _copy_in_place(new, served, ["rels.npy"])  # cp -p: same size, the old mtime put back
    os.utime(served / "rels.npy", ns=(info.st_atime_ns, info.st_mtime_ns))
    with pytest.raises(GraphLoadError, match="rewritten in place"):
        mapped.one_hop(["n5"])


def _truncate_and_query(folder: str, conn) -> None:
    """Child process: map, truncate a mapped file, query (SIGBUS before the check existed)."""
    kg = load_graph(folder, mmap=True)
    kg._mapped_files.interval = 0
    os.truncate(os.path.join(folder, "adj_rows.npy"), 0)  # every page beyond the end
    try:
        kg.one_hop(["n5"])
        conn.send("answered")
    except GraphLoadError as exc:
        conn.send(f"GraphLoadError: {exc}")


def test_a_truncated_mapped_file_is_a_typed_error_not_sigbus(tmp_path):
    _, served, _ = _served(tmp_path)
    ctx = mp.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    child = ctx.Process(target=_truncate_and_query, args=(str(served), child_end))
    child.start()
    child.join(60)
    assert child.exitcode == 0, f"the process died (exit code {child.exitcode}: -7 is SIGBUS)"
    outcome = parent_end.recv()
    assert outcome.startswith("GraphLoadError") and "truncated" in outcome, outcome


def test_the_safe_swap_keeps_a_mapped_graph_answering(tmp_path):
    mapped, served, new = _served(tmp_path)
    before = mapped.one_hop(["n5"])
    os.replace(served, tmp_path / "retired")  # save to a new folder, rename it into place
    os.replace(new, served)
    import shutil

    shutil.rmtree(tmp_path / "retired")
    assert mapped.one_hop(["n5"]) == before  # still the files it mapped, unchanged
    mapped.check_files()
