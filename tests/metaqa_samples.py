"""Samples of MetaQA's KB: small connected ones for the database tests, entity names for the
embedding tests."""

from __future__ import annotations

import random
from collections import defaultdict

from shared_data import shared_data


def metaqa_films(n_triples: int, seed: int, *,
                 forbidden: str = "'\"\\") -> list[tuple[str, str, str]]:
    """All triples of randomly chosen MetaQA films until ``n_triples`` (connected via hubs).

    Films with a name containing a ``forbidden`` character are left out (FalkorDB's Bolt endpoint
    does not escape parameters; see docs/graph-databases.md).
    """
    by_head: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    with open(shared_data("metaqa", "kb_reconstructed.txt"), encoding="utf-8") as f:
        for line in f:
            h, r, t = line.rstrip("\n").split("|")
            by_head[h].append((h, r, t))
    heads = sorted(by_head)
    random.Random(seed).shuffle(heads)
    out: list[tuple[str, str, str]] = []
    for h in heads:
        if not any(c in x for t in by_head[h] for x in t for c in forbidden):
            out.extend(by_head[h])
        if len(out) >= n_triples:
            break
    return out


def metaqa_entity_names() -> list[str]:
    """MetaQA's distinct entity names (heads and tails), in file order."""
    names: dict[str, None] = {}
    with open(shared_data("metaqa", "kb_reconstructed.txt"), encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("|")
            if len(parts) == 3:
                names.setdefault(parts[0])
                names.setdefault(parts[2])
    return list(names)
