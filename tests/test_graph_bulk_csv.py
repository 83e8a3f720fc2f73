"""The block-wise plain-file reader (kgrag.graph.bulk_csv) gives exactly the graph of the
line-by-line reader: same names, same normalisation, same ids in order of first appearance."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest

import kgrag.graph.bulk_csv as bulk_csv
from kgrag import KnowledgeGraph
from kgrag.graph import read_triples
from kgrag.graph.io import iter_triples


def _line_by_line(path, sep):
    return KnowledgeGraph.from_triples(iter_triples(path, sep=sep, header=False))


def _same_graph(a: KnowledgeGraph, b: KnowledgeGraph) -> None:
    assert a.node_names == b.node_names
    assert a.relation_names == b.relation_names
    for name in ("heads", "rels", "tails"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.stats["input_edges"] == b.stats["input_edges"]


SHORT_NAMES = [f"e{i}" for i in range(40)] + [  # all at most 8 bytes: integer keys
    "Café", unicodedata.normalize("NFD", "Café"), " pad ", "pad", "ü" * 4, "x" * 8, "e1 ", "名前"]
LONG_NAMES = [f"a rather long entity name number {i}" for i in range(30)] + [
    " padded ", "padded", "x" * 9, "日本語の名前", unicodedata.normalize("NFD", "Crème brûlée")]


@pytest.mark.parametrize("names", [SHORT_NAMES, SHORT_NAMES + LONG_NAMES], ids=["short", "mixed"])
@pytest.mark.parametrize("rels", [["r", "r2", " r ", "r" * 8], ["r", "rel two", "r" * 12, " r "]],
                         ids=["short-rels", "long-rels"])
@pytest.mark.parametrize("block_bytes", [bulk_csv.BLOCK_BYTES, 97, 400])
def test_bulk_reader_equals_line_reader(tmp_path, monkeypatch, names, rels, block_bytes):
    """Small blocks: ids carry over between blocks, some blocks short-only, others mixed."""
    monkeypatch.setattr(bulk_csv, "BLOCK_BYTES", block_bytes)
    rng = random.Random(7)
    lines = [f"{rng.choice(names)}\t{rng.choice(rels)}\t{rng.choice(names)}" for _ in range(600)]
    path = tmp_path / "kb.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert bulk_csv.read_plain_triples(str(path), sep="\t", header=False, encoding="utf-8")
    fast = read_triples(path, sep="\t", header=False)
    _same_graph(fast, _line_by_line(path, "\t"))
    # the variants were merged into one node each
    assert "Café" in fast.node_index and unicodedata.normalize("NFD", "Café") not in fast.node_index
    assert "pad" in fast.node_index and " pad " not in fast.node_index
    assert "r" in fast.relation_index and " r " not in fast.relation_index


def test_bulk_reader_falls_back_on_empty_field(tmp_path):
    path = tmp_path / "kb.tsv"
    path.write_text("a\tr\tb\n \tr\tc\n", encoding="utf-8")
    assert bulk_csv.read_plain_triples(str(path), sep="\t", header=False, encoding="utf-8") is None
