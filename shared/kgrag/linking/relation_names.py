"""Relations as a person or an LLM writes them -> the graph's relation names.

An LLM reading a question writes "place of birth", not ``people.person.place_of_birth``; a
Wikidata-style graph names it ``P19`` and a label table says "place of birth". Methods that take
a relation *written in words* (ByoKG-RAG's metapaths, UltRAG's query relations) resolve it here,
exactly, against every text :func:`kgrag.text.relations.relation_texts` gives a relation (its
name, labels and aliases, the last segment of a path-like id, the whole id in words), compared
by :func:`~kgrag.linking.fuzzy.name_key` (case, ``_``, ``.`` and spaces ignored).

One written form may name several relations: Freebase-style graphs reuse property names under
different types (PathQuestion-L's KB has 8 relations ending in ``genre``). :meth:`lookup`
returns all of them, in graph order, and the caller follows each (a union), since which one was
meant is decided by the graph -- only the one leaving the current entities has edges.

>>> from kgrag import KnowledgeGraph
>>> kg = KnowledgeGraph.from_triples([("a", "film.film.genre", "b"),
...                                   ("c", "music.album.genre", "d"), ("a", "P19", "e")],
...                                  relation_labels={"P19": "place of birth"})
>>> index = RelationTextIndex.from_graph(kg)
>>> index.lookup("Place of Birth"), index.lookup("genre"), index.lookup("film genre")
(['P19'], ['film.film.genre', 'music.album.genre'], [])
>>> index.lookup("film.film.genre")
['film.film.genre']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kgrag.linking.fuzzy import name_key
from kgrag.text.relations import all_relation_texts

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.base import GraphStore


class RelationTextIndex:
    """Exact lookup of written relations by the keys of their texts."""

    def __init__(self, names: Sequence[str], texts: Iterable[Sequence[str]]) -> None:
        self.names = list(names)
        self._exact = {n: n for n in self.names}
        self._by_key: dict[str, list[str]] = {}
        for name, group in zip(self.names, texts):
            for text in [name, *group]:
                key = name_key(text)
                if key:
                    bucket = self._by_key.setdefault(key, [])
                    if name not in bucket:
                        bucket.append(name)

    @classmethod
    def from_graph(cls, graph: GraphStore) -> RelationTextIndex:
        names = graph.list_relations()
        return cls(names, all_relation_texts(graph, names))

    def lookup(self, written: str) -> list[str]:
        """Graph relations ``written`` names: the exact name, else every relation one of whose
        texts has the same key (graph order); ``[]`` when none does."""
        text = str(written).strip()
        if text in self._exact:
            return [text]
        return list(self._by_key.get(name_key(text), ()))
