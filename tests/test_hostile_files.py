"""Regression tests for careless or hostile user files (issue 18, defects 1, 7 and 9).

Saved graph and linker directories and triples files get a typed error (``GraphLoadError`` /
``GraphFormatError``, both ``KgragError``), never an ``AttributeError``, ``MemoryError``,
``RecursionError`` or a hang.
"""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.errors import GraphFormatError, GraphLoadError, KgragError
from kgrag.graph import load_graph, read_triples, save_graph
from kgrag.graph.checksums import refresh_checksums
from kgrag.graph.io import decide_header
from kgrag.linking import EntityLinker

TRIPLES = [("Paprika", "directed_by", "Satoshi Kon"), ("Tokyo Godfathers", "directed_by",
                                                        "Satoshi Kon")]


@pytest.fixture
def saved_graph(tmp_path):
    kg = KnowledgeGraph.from_triples(TRIPLES, aliases={"Satoshi Kon": ["Kon"]})
    save_graph(kg, tmp_path / "g")
    return tmp_path / "g"


def _rewrite_json(path, mutate):
    """Change a saved JSON file and its checksum (the structural checks must still refuse it)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(mutate(data)), encoding="utf-8")
    if path.name != "manifest.json":
        refresh_checksums(path.parent)


DEEP = "[" * 100000 + "]" * 100000


# ---------------------------------------------------------------------- saved graphs
@pytest.mark.parametrize("name", ["manifest.json", "nodes.json", "extras.json",
                                  "relations.json"])
def test_deeply_nested_json_in_a_saved_graph_is_typed(saved_graph, name):
    (saved_graph / name).write_text(DEEP, encoding="utf-8")
    if name != "manifest.json":
        refresh_checksums(saved_graph)
    with pytest.raises(GraphLoadError):
        load_graph(saved_graph)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("aliases", [["Kon"], "Kon", {"Satoshi Kon": 3}])
def test_aliases_of_the_wrong_type_are_typed(saved_graph, aliases, mmap):
    _rewrite_json(saved_graph / "extras.json", lambda d: {**d, "aliases": aliases})
    with pytest.raises(GraphLoadError, match="aliases"):
        load_graph(saved_graph, mmap=mmap)


def test_aliases_as_a_list_in_the_constructor_are_typed():
    with pytest.raises(GraphFormatError, match="aliases must be a mapping"):
        KnowledgeGraph.from_triples(TRIPLES, aliases=["Kon"])
    with pytest.raises(GraphFormatError, match="aliases must be a mapping"):
        EntityLinker(["Satoshi Kon"], aliases=["Kon"], mode="fuzzy")


@pytest.mark.parametrize("bad", [7, "", "   ", None])
@pytest.mark.parametrize("table", ["nodes.json", "relations.json"])
def test_non_string_or_empty_names_are_refused(saved_graph, bad, table):
    _rewrite_json(saved_graph / table, lambda names: [bad] + names[1:])
    with pytest.raises(GraphLoadError, match=table):
        load_graph(saved_graph)


def test_npy_header_lying_about_its_shape_is_refused_before_allocating(saved_graph):
    _lying_npy(saved_graph / "heads.npy", 10**11)
    refresh_checksums(saved_graph)
    with pytest.raises(GraphLoadError, match="header promises"):
        load_graph(saved_graph)


def _load_in_thread(fn):
    outcome: dict = {}

    def run():
        try:
            fn()
            outcome["error"] = None
        except BaseException as exc:  # recorded for the assertion
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    return worker.is_alive(), outcome.get("error")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_manifest_that_is_a_fifo_is_refused_without_hanging(saved_graph):
    (saved_graph / "manifest.json").unlink()
    os.mkfifo(saved_graph / "manifest.json")
    hung, error = _load_in_thread(lambda: load_graph(saved_graph))
    try:
        assert not hung, "loading a FIFO manifest hangs"
        assert isinstance(error, GraphLoadError) and "regular file" in str(error)
    finally:
        if hung:  # unblock the reader so the thread ends
            with open(saved_graph / "manifest.json", "w") as fifo:
                fifo.write("{}")


# ---------------------------------------------------------------------- linkers
@pytest.fixture
def saved_linker(tmp_path):
    linker = EntityLinker(["Paprika", "Satoshi Kon"], aliases={"Kon": "Satoshi Kon"},
                          mode="fuzzy")
    linker.save(tmp_path / "l")
    return tmp_path / "l"


@pytest.mark.parametrize("name", ["manifest.json", "names.json", "aliases.json"])
def test_deeply_nested_json_in_a_saved_linker_is_typed(saved_linker, name):
    (saved_linker / name).write_text(DEEP, encoding="utf-8")
    with pytest.raises(GraphLoadError):
        EntityLinker.load(saved_linker)


def test_linker_aliases_and_names_of_the_wrong_type(saved_linker):
    (saved_linker / "aliases.json").write_text('["Kon"]', encoding="utf-8")
    with pytest.raises(GraphLoadError, match="aliases"):
        EntityLinker.load(saved_linker)
    (saved_linker / "aliases.json").write_text('{"Kon": [1]}', encoding="utf-8")
    with pytest.raises(GraphLoadError, match="aliases"):
        EntityLinker.load(saved_linker)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_linker_manifest_fifo_is_refused(saved_linker):
    (saved_linker / "manifest.json").unlink()
    os.mkfifo(saved_linker / "manifest.json")
    hung, error = _load_in_thread(lambda: EntityLinker.load(saved_linker))
    try:
        assert not hung and isinstance(error, GraphLoadError)
    finally:
        if hung:
            with open(saved_linker / "manifest.json", "w") as fifo:
                fifo.write("{}")


def _lying_npy(path, claimed: int) -> None:
    """An int64 .npy of 3 elements whose header claims ``claimed`` elements."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<i8", "fortran_order": False, "shape": (claimed,)})
        fh.write(np.arange(3, dtype="<i8").tobytes())


def test_linker_owner_npy_lying_header(saved_linker):
    _lying_npy(saved_linker / "surface_owner.npy", 10**11)
    with pytest.raises(GraphLoadError, match="header promises"):
        EntityLinker.load(saved_linker)


# ---------------------------------------------------------------------- triples files
def test_from_csv_on_a_directory_is_typed(tmp_path):
    with pytest.raises(GraphFormatError, match="directory"):
        read_triples(tmp_path)


def test_from_csv_on_a_missing_file_is_typed_and_still_a_file_not_found_error(tmp_path):
    with pytest.raises(GraphFormatError) as info:
        read_triples(tmp_path / "none.tsv")
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, KgragError)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_from_csv_on_a_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.tsv")
    hung, error = _load_in_thread(lambda: read_triples(tmp_path / "pipe.tsv"))
    assert not hung and isinstance(error, GraphFormatError)


@pytest.mark.parametrize("text,edges,header_row", [
    ("Source\ttype\tTarget\nA\tr\tB\n", 2, 0),  # "type" is a relation name: a triple
    ("source\tlabel\ttarget\nA\tr\tB\n", 2, 0),
    ("head\trelation\ttail\nA\tr\tB\n", 1, 1),
    ("Subject\tPredicate\tObject\nA\tr\tB\n", 1, 1),
    ("h,r,t\nA,r,B\n", 1, 1),
    ("target\trelation\tsource\nA\tr\tB\n", 2, 0),  # roles in the wrong columns
    ("A\tr\tB\nC\tr\tD\n", 2, 0),
], ids=["source-type-target", "source-label-target", "head-relation-tail", "spo",
        "hrt-comma", "swapped", "no-header"])
@pytest.mark.parametrize("plain", [True, False], ids=["bulk", "line-reader"])
def test_header_detection_rule(tmp_path, text, edges, header_row, plain):
    if not plain:
        text = text.replace("\n", "\r\n")  # a carriage return sends it to the line reader
    path = tmp_path / ("g.csv" if "," in text else "g.tsv")
    path.write_bytes(text.encode())
    kg = read_triples(path)
    assert kg.num_edges == edges and kg.stats["header_row"] == header_row
    assert kg.header_rule.startswith("auto:")
    forced = read_triples(path, header=True)
    assert forced.num_edges == edges - (1 - header_row) and forced.stats["header_row"] == 1
    assert "header=True" in forced.header_rule
    kept = read_triples(path, header=False)
    assert kept.num_edges == edges + header_row and kept.stats["header_row"] == 0


def test_header_rule_is_reported(caplog):
    assert decide_header(["Source", "type", "Target"])[1].startswith(
        "auto: the first row ['source', 'type', 'target'] looks like column names")
    assert decide_header(["x", "y", "z"], header=True) == (True, "header=True was passed")


# ---------------------------------------------------------------------- issue 30, item 7
def _csv_with_stray_quote(path, sep=",", close_at=55, ending="\n"):
    """60 triples; line 6 opens a quote that (optionally) line ``close_at + 1`` closes."""
    lines = [f"a{i}{sep}r{sep}b{i}" for i in range(60)]
    lines[5] = f'"a5{sep}r{sep}b5'
    if close_at is not None:
        lines[close_at] = f'a{close_at}"{sep}r{sep}b{close_at}'
    path.write_bytes((ending.join(lines) + ending).encode())
    return path


@pytest.mark.parametrize("sep", [",", ";"])
@pytest.mark.parametrize("ending", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("close_at", [55, None], ids=["closed-later", "never-closed"])
def test_a_stray_quote_does_not_swallow_lines(tmp_path, sep, ending, close_at, caplog):
    path = _csv_with_stray_quote(tmp_path / "g.csv", sep, close_at, ending)
    last = 56 if close_at else 60
    with pytest.raises(GraphFormatError, match="quoted field opened on line 6") as info:
        read_triples(path, on_error="raise")
    assert info.value.line == 6 and f"to line {last}" in str(info.value)
    with caplog.at_level("WARNING"):
        kg = read_triples(path, on_error="skip")
    swallowed = last - 6 + 1
    assert kg.stats["skipped_records"] == swallowed
    assert kg.num_edges == 60 - swallowed
    assert not any("\n" in name for name in kg.node_names)
    assert f"lines 6-{last}" in caplog.text


def test_an_intended_line_break_in_a_quoted_name_is_refused_too(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text('c,r,d\n"two\nlines",r,b\n', encoding="utf-8")
    with pytest.raises(GraphFormatError, match="line break"):
        read_triples(path)


# ---------------------------------------------------------------------- issue 30, item 11a
@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_non_utf8_text_names_the_line_and_the_encoding_option(tmp_path, suffix):
    sep = "\t" if suffix == ".tsv" else ","
    path = tmp_path / f"g{suffix}"
    path.write_bytes(f"a{sep}r{sep}b\n".encode() * 30
                     + f"caf\u00e9{sep}r{sep}b\n".encode("latin-1"))
    with pytest.raises(GraphFormatError, match="encoding=") as info:
        read_triples(path)
    assert info.value.line == 31
    assert read_triples(path, encoding="latin-1").has_node("café")
