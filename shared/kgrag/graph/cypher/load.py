"""Load triples into a graph database (Neo4j, FalkorDB) in batches, idempotently.

Each batch is two kinds of ``UNWIND`` query: one ``MERGE``s the batch's nodes by name, one per
relation ``MERGE``s its edges between them (the relationship type cannot be a parameter, so the
relation name is backtick-quoted into the query; with ``relation_property`` it is a parameter).
``MERGE`` makes a re-run add nothing. An index on the name (a uniqueness constraint on Neo4j)
is created first so every ``MERGE`` is an index lookup.

    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore
    store = FalkorDBGraphStore.from_url("localhost", 6379, graph="metaqa")
    summary = store.load_triples("kb.txt")          # or a KnowledgeGraph, or an iterable
    print(summary)
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from kgrag.errors import GraphFormatError
from kgrag.graph.base import TripleSource
from kgrag.text.names import normalize_name

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.cypher.store import CypherGraphStore


@dataclass
class LoadSummary:
    """What a load did. ``nodes_created`` / ``relationships_created`` are 0 on a re-run."""

    triples: int = 0
    nodes_created: int = 0
    relationships_created: int = 0
    batches: int = 0
    seconds: float = 0.0
    index: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (f"loaded {self.triples} triples in {self.batches} batches ({self.seconds:.1f} s): "
                f"{self.nodes_created} nodes and {self.relationships_created} relationships "
                f"created; name index: {self.index}")


def _triples_of(source: Any, read_options: dict[str, Any]) -> tuple[Iterable[Sequence[Any]],
                                                                    int | None]:
    """An iterable of (head, relation, tail) and its length when known."""
    if isinstance(source, TripleSource):
        return ((t.head, t.relation, t.tail) for t in source.triples()), source.num_edges
    if isinstance(source, (str, os.PathLike)):
        from kgrag.graph.io import iter_triples

        return iter_triples(source, **read_options), None
    try:
        total = len(source)
    except TypeError:
        total = None
    return source, total


def _batches(triples: Iterable[Sequence[Any]], size: int) -> Iterator[list[tuple[str, str, str]]]:
    batch: list[tuple[str, str, str]] = []
    for position, record in enumerate(triples, start=1):
        try:
            h, r, t = record
        except (TypeError, ValueError):
            raise GraphFormatError(f"expected (head, relation, tail), got {record!r:.200}",
                                   line=position) from None
        h, r, t = normalize_name(h), normalize_name(r), normalize_name(t)
        if not (h and r and t):
            raise GraphFormatError(f"empty head, relation or tail in {record!r:.200}",
                                   line=position)
        batch.append((h, r, t))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def load_triples(
    store: "CypherGraphStore",
    source: Any,
    *,
    batch_size: int = 5000,
    progress: bool = True,
    create_index: bool = True,
    **read_options: Any,
) -> LoadSummary:
    """MERGE the triples of ``source`` into ``store``'s database; return a :class:`LoadSummary`.

    ``source``: a :class:`~kgrag.graph.memory.KnowledgeGraph` (its isolated nodes are written
    too), a path to a triples file (read with :func:`kgrag.graph.io.iter_triples`;
    ``read_options`` such as ``sep=`` / ``columns=`` / ``header=`` are passed on), or an
    iterable of ``(head, relation, tail)``. Names are normalised like in memory. A malformed
    record raises :class:`~kgrag.errors.GraphFormatError` (batches before it are kept).
    """
    if not store.node_label:
        raise ValueError("loading needs a node_label (MERGE by name on unlabelled nodes is slow)")
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    from tqdm.auto import tqdm

    started = time.perf_counter()
    summary = LoadSummary()
    summary.index = store.ensure_name_index() if create_index else "not requested"
    node_q = f"UNWIND $names AS nm MERGE {store._node('n', 'nm')}"
    triples, total = _triples_of(source, read_options)
    bar = tqdm(total=total, unit="triple", desc=f"loading into {store.backend}",
               disable=not progress)

    def add(counters: dict[str, int]) -> None:
        summary.nodes_created += counters.get("nodes_created", 0)
        summary.relationships_created += counters.get("relationships_created", 0)

    try:
        if isinstance(source, TripleSource):  # isolated nodes have no triple
            for i in range(0, source.num_nodes, batch_size):
                add(store._write(node_q, {"names": source.node_names[i:i + batch_size]}))
        for batch in _batches(triples, batch_size):
            by_relation: dict[str, list[list[str]]] = defaultdict(list)
            for h, r, t in batch:
                by_relation[r].append([h, t])
            # quote every relation first: a name the server cannot take fails before any write
            quoted = ({r: store._quote(r) for r in by_relation}
                      if store.relation_property is None else {})
            names = sorted({h for h, _, _ in batch} | {t for _, _, t in batch})
            add(store._write(node_q, {"names": names}))
            if store.relation_property is None:
                for relation, pairs in by_relation.items():
                    add(store._write(
                        f"UNWIND $pairs AS p MATCH {store._node('h', 'p[0]')} "
                        f"MATCH {store._node('t', 'p[1]')} "
                        f"MERGE (h)-[:{quoted[relation]}]->(t)", {"pairs": pairs}))
            else:
                add(store._write(
                    f"UNWIND $rows AS p MATCH {store._node('h', 'p[0]')} "
                    f"MATCH {store._node('t', 'p[2]')} "
                    f"MERGE (h)-[:{store._rel_type} {{{store._rel_prop}: p[1]}}]->(t)",
                    {"rows": [list(x) for x in batch]}))
            summary.triples += len(batch)
            summary.batches += 1
            bar.update(len(batch))
    finally:
        bar.close()
        store.refresh()
        summary.seconds = time.perf_counter() - started
    return summary

