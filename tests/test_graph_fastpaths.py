"""The single-source plain-Python paths of KnowledgeGraph (one_hop / follow_path of one name)
give exactly what the array code gives, and the fast Triple / Path constructors make objects
indistinguishable from constructed ones."""

from __future__ import annotations

import dataclasses
import pickle
import random
import unicodedata

import numpy as np
import pytest

import kgrag.graph.memory as memory
from kgrag import KnowledgeGraph
from kgrag.context.types import Path, Triple, _path_from_names, _triples_from_rows


def _random_graph(seed: int) -> KnowledgeGraph:
    rng = random.Random(seed)
    n, r = rng.randint(1, 10), rng.randint(1, 3)
    triples = [(f"n{rng.randrange(n)}", f"r{rng.randrange(r)}", f"n{rng.randrange(n)}")
               for _ in range(rng.randint(1, 70))]  # self-loops, reciprocal and parallel edges
    return KnowledgeGraph.from_triples(triples)


@pytest.mark.parametrize("small_degree", [memory._SMALL_DEGREE, 3])  # 3: hubs take the array path
def test_one_hop_single_node_equals_array_path(monkeypatch, small_degree):
    monkeypatch.setattr(memory, "_SMALL_DEGREE", small_degree)
    for seed in range(25):
        kg = _random_graph(seed)
        for name in kg.node_names + ["missing"]:
            for direction in ("out", "in", "both"):
                for limit in (None, 0, 2, -1):
                    edges = kg.edges_ids(kg.node_ids([name]), direction)
                    expected = kg.edge_triples(edges if limit is None else edges[:limit])
                    got = kg.one_hop([name], direction=direction, limit=limit)
                    assert got == expected
                    assert [t.as_tuple() for t in got] == [t.as_tuple() for t in expected]
                    assert got == kg.one_hop((name,), direction=direction, limit=limit)


def _hub_graph(seed: int) -> KnowledgeGraph:
    """Node n0 has a few hundred edges: its steps take the CSR binary-search branch."""
    rng = random.Random(seed)
    triples = [(f"n{rng.randrange(40)}", f"r{rng.randrange(3)}", f"n{rng.randrange(40)}")
               for _ in range(300)]
    triples += [("n0", f"r{rng.randrange(3)}", f"n{rng.randrange(40)}") for _ in range(150)]
    triples += [(f"n{rng.randrange(40)}", f"r{rng.randrange(3)}", "n0") for _ in range(150)]
    return KnowledgeGraph.from_triples(triples)


@pytest.mark.parametrize("make", [_random_graph, _hub_graph])
def test_follow_path_single_source_equals_array_path(make):
    for seed in range(25 if make is _random_graph else 4):
        kg = make(seed)
        forced = make(seed)
        forced._walks_one_source = lambda *args, **kwargs: None  # always the array code
        rels = kg.relation_names
        paths = [[a] for a in rels] + [[a, b] for a in rels for b in rels]
        paths += [[a, f"{b}_inv"] for a in rels for b in rels] + [f"{rels[0]} -> ~{rels[-1]}"]
        for name in kg.node_names[:5] + ["missing"]:
            for path in paths:
                for default in ("out", "in", "both"):
                    for fan_out, max_paths in ((None, None), (1, None), (2, 3)):
                        got = kg.follow_path([name], path, fan_out=fan_out, max_paths=max_paths,
                                             default_direction=default)
                        expected = forced.follow_path([name], path, fan_out=fan_out,
                                                      max_paths=max_paths,
                                                      default_direction=default)
                        assert got == expected
                        assert [(p.nodes, p.relations, p.forward) for p in got] == [
                            (p.nodes, p.relations, p.forward) for p in expected]


def test_follow_path_parsing_is_memoised_without_changing_results():
    kg = KnowledgeGraph.from_triples([("a", "r", "b"), ("b", "s", "c")])
    expected = [Path(("a", "b", "c"), ("r", "s"), (True, True))]
    assert kg.follow_path(["a"], "r -> s") == expected
    assert kg.follow_path(["a"], "r -> s") == expected  # from the memo
    assert kg.follow_path(["a"], iter(["r", "s"])) == expected  # an iterator is read once
    assert kg.follow_path(["a"], ["r", "s"]) == expected
    assert kg.follow_path(["a"], "r -> unknown") == []
    assert kg.follow_path(["a"], "r -> unknown") == []
    with pytest.raises(ValueError):
        kg.follow_path(["a"], "r -> ")


def test_single_name_lookup_normalises_like_node_ids():
    nfd = unicodedata.normalize("NFD", "Café")
    kg = KnowledgeGraph.from_triples([(nfd, "r", "b")])
    assert kg.one_hop(["  Café "]) == [Triple("Café", "r", "b")]
    assert kg.one_hop([nfd]) == [Triple("Café", "r", "b")]
    assert kg.follow_path([f" {nfd}"], "r") == [Path(("Café", "b"), ("r",))]
    # names given to from_arrays are not normalised: a padded name is looked up as "a"
    raw = KnowledgeGraph.from_arrays(np.array([0]), np.array([0]), np.array([1]), [" a", "a"],
                                     ["r"])
    assert raw.one_hop([" a"]) == raw.edge_triples(raw.edges_ids(raw.node_ids([" a"])))
    assert raw.one_hop([" a"], direction="out") == []


def test_fast_constructors_make_ordinary_objects():
    fast = _triples_from_rows([(0, 0, 1), (1, 0, 1)], ["a", "b"], ["r"])
    slow = [Triple("a", "r", "b"), Triple("b", "r", "b")]
    assert fast == slow and [hash(t) for t in fast] == [hash(t) for t in slow]
    assert [repr(t) for t in fast] == [repr(t) for t in slow]
    assert [vars(t) for t in fast] == [vars(t) for t in slow]
    assert pickle.loads(pickle.dumps(fast)) == slow
    assert dataclasses.asdict(fast[0]) == dataclasses.asdict(slow[0])
    assert dataclasses.replace(fast[0], score=0.5).score == 0.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast[0].head = "x"  # type: ignore[misc]
    path = _path_from_names(("a", "b"), ("r",), (False,))
    built = Path(("a", "b"), ("r",), (False,))
    assert path == built and hash(path) == hash(built) and repr(path) == repr(built)
    assert vars(path) == vars(built) and path.triples() == built.triples()
    with pytest.raises(dataclasses.FrozenInstanceError):
        path.nodes = ()  # type: ignore[misc]
