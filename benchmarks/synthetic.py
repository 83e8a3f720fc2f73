"""Synthetic knowledge graphs for the graph-store benchmarks.

A generated graph has the properties that make KG workloads hard for a naive store:

* **power-law degrees** -- heads and tails are drawn from Zipf-like weights over the node ids
  (``weight(i) ∝ (i + 1) ** -alpha``), with a heavier tail for tails (``alpha_in``) than for heads
  (``alpha_out``), as in real KGs where a few objects ("English", "USA") have huge in-degree;
* **many relation types** -- ``num_relations`` relations with Zipf frequencies
  (``weight(r) ∝ (r + 1) ** -zipf_relations``), so a few relations are common and most are rare.

Node ids are shuffled, so hubs are spread over the id range instead of being ids 0, 1, 2, ...
Edges are exactly ``num_edges`` distinct ``(head, relation, tail)`` triples without self-loops.
Everything is seeded: the same arguments give the same arrays.

Names are cheap strings ``e123`` / ``r7`` derived from the ids, so the graph can be built from
integer arrays directly (:meth:`kgrag.KnowledgeGraph.from_arrays`) or written as a triples file
(:func:`write_triples`) to time loading from text.

Usage::

    python benchmarks/synthetic.py --edges 1000000 --out benchmarks/.cache/synth_1M.tsv
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

DEFAULT_RELATIONS = 200
DEFAULT_EDGES_PER_NODE = 4.0


@dataclass
class SyntheticGraph:
    """Edge arrays (int32, unsorted) and the sizes of the name tables."""

    heads: np.ndarray
    rels: np.ndarray
    tails: np.ndarray
    num_nodes: int
    num_relations: int

    @property
    def num_edges(self) -> int:
        return int(len(self.heads))

    def node_names(self) -> list[str]:
        return node_names(self.num_nodes)

    def relation_names(self) -> list[str]:
        return relation_names(self.num_relations)


def node_names(n: int) -> list[str]:
    """``["e0", "e1", ...]`` -- the name of node id ``i`` is ``f"e{i}"``."""
    return [f"e{i}" for i in range(n)]


def relation_names(r: int) -> list[str]:
    """``["r0", "r1", ...]`` -- relation id ``i`` is named ``f"r{i}"`` (r0 is the most frequent)."""
    return [f"r{i}" for i in range(r)]


def _zipf_sampler(n: int, alpha: float) -> np.ndarray:
    """Cumulative distribution of Zipf-like weights over ``n`` items (for inverse-CDF sampling)."""
    weights = np.arange(1, n + 1, dtype=np.float64) ** -alpha
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return cdf


def _draw(rng: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    idx = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(idx, len(cdf) - 1).astype(np.int64)


def generate(
    num_edges: int,
    *,
    num_nodes: int | None = None,
    num_relations: int = DEFAULT_RELATIONS,
    alpha_out: float = 0.6,
    alpha_in: float = 0.9,
    zipf_relations: float = 1.0,
    seed: int = 0,
) -> SyntheticGraph:
    """A seeded graph of exactly ``num_edges`` distinct triples (see the module docstring).

    ``num_nodes`` defaults to ``num_edges / 4`` (MetaQA's KB has about 3 edges per entity).
    """
    if num_edges < 1:
        raise ValueError("num_edges must be positive")
    n = int(num_nodes if num_nodes is not None
            else max(2, round(num_edges / DEFAULT_EDGES_PER_NODE)))
    r = int(num_relations)
    if n < 2 or r < 1:
        raise ValueError("need at least 2 nodes and 1 relation")
    if num_edges > n * (n - 1) * r // 2:
        raise ValueError("too many edges for so few nodes and relations")
    rng = np.random.default_rng(seed)
    cdf_out = _zipf_sampler(n, alpha_out)
    cdf_in = _zipf_sampler(n, alpha_in)
    cdf_rel = _zipf_sampler(r, zipf_relations)
    perm_out = rng.permutation(n)  # rank -> node id, so hubs are spread over the id range
    perm_in = rng.permutation(n)
    rel_perm = np.arange(r)  # relation ids stay in frequency order: r0 is the most frequent
    keys = np.empty(0, np.int64)
    # Draw in rounds until there are enough distinct non-loop triples (duplicates are rare except
    # between hubs); key = (head * R + rel) * N + tail identifies a triple.
    while len(keys) < num_edges:
        need = num_edges - len(keys)
        batch = int(need * 1.05) + 16
        h = perm_out[_draw(rng, cdf_out, batch)]
        t = perm_in[_draw(rng, cdf_in, batch)]
        rel = rel_perm[_draw(rng, cdf_rel, batch)]
        ok = h != t
        new = (h[ok] * r + rel[ok]) * n + t[ok]
        new = new[np.sort(np.unique(new, return_index=True)[1])]  # first occurrence, draw order
        new = new[~np.isin(new, keys)]
        keys = np.concatenate([keys, new[:need]])
    # Shuffle so the edge arrays are not sorted (a builder must do the sorting itself).
    keys = keys[rng.permutation(len(keys))]
    tails = (keys % n).astype(np.int32)
    rest = keys // n
    rels = (rest % r).astype(np.int32)
    heads = (rest // r).astype(np.int32)
    return SyntheticGraph(heads, rels, tails, n, r)


def save_arrays(graph: SyntheticGraph, path: str) -> None:
    """Save the edge arrays and table sizes as one ``.npz`` (no pickle)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp.npz"
    np.savez(tmp, heads=graph.heads, rels=graph.rels, tails=graph.tails,
             sizes=np.array([graph.num_nodes, graph.num_relations], np.int64))
    os.replace(tmp, path)


def load_arrays(path: str) -> SyntheticGraph:
    with np.load(path, allow_pickle=False) as data:
        n, r = (int(x) for x in data["sizes"])
        return SyntheticGraph(data["heads"], data["rels"], data["tails"], n, r)


def cached(num_edges: int, cache_dir: str, *, seed: int = 0) -> tuple[SyntheticGraph, str]:
    """The graph for ``num_edges`` / ``seed``, generated once and kept in ``cache_dir``."""
    path = os.path.join(cache_dir, f"synth_{num_edges}_s{seed}.npz")
    if os.path.exists(path):
        return load_arrays(path), path
    graph = generate(num_edges, seed=seed)
    save_arrays(graph, path)
    return graph, path


def write_triples(graph: SyntheticGraph, path: str, *, sep: str = "\t",
                  chunk: int = 500_000) -> None:
    """Write ``head<sep>relation<sep>tail`` lines with the ``e``/``r`` names (no header)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    names = graph.node_names()
    rnames = graph.relation_names()
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for start in range(0, graph.num_edges, chunk):
            h = graph.heads[start:start + chunk].tolist()
            rl = graph.rels[start:start + chunk].tolist()
            t = graph.tails[start:start + chunk].tolist()
            fh.write("".join(f"{names[a]}{sep}{rnames[b]}{sep}{names[c]}\n"
                             for a, b, c in zip(h, rl, t)))
    os.replace(tmp, path)


def cached_triples_file(num_edges: int, cache_dir: str, *, seed: int = 0, sep: str = "\t") -> str:
    """Path of the triples file for the cached graph, written on first use."""
    path = os.path.join(cache_dir, f"synth_{num_edges}_s{seed}.tsv")
    if not os.path.exists(path):
        graph, _ = cached(num_edges, cache_dir, seed=seed)
        write_triples(graph, path, sep=sep)
    return path


def describe(graph: SyntheticGraph) -> dict[str, float]:
    """Degree and relation-frequency summary (to check the generator does what it says)."""
    out_deg = np.bincount(graph.heads, minlength=graph.num_nodes)
    in_deg = np.bincount(graph.tails, minlength=graph.num_nodes)
    rel_freq = np.sort(np.bincount(graph.rels, minlength=graph.num_relations))[::-1]
    return {
        "nodes": graph.num_nodes,
        "nodes_with_edges": int(np.count_nonzero(out_deg + in_deg)),
        "edges": graph.num_edges,
        "relations": graph.num_relations,
        "max_out_degree": int(out_deg.max()),
        "max_in_degree": int(in_deg.max()),
        "median_degree": float(np.median((out_deg + in_deg)[out_deg + in_deg > 0])),
        "top_relation_share": float(rel_freq[0] / graph.num_edges),
        "relations_under_0.1pct": int(np.count_nonzero(rel_freq < graph.num_edges / 1000)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write a triples file here (tab-separated)")
    parser.add_argument("--npz", help="write the edge arrays here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    graph = generate(args.edges, seed=args.seed)
    print(f"generated in {time.perf_counter() - start:.1f} s: {describe(graph)}", file=sys.stderr)
    if args.npz:
        save_arrays(graph, args.npz)
    if args.out:
        write_triples(graph, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
