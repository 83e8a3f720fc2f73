"""What an embedder reads for a relation: one place, used by every method and by linking.

A relation is embedded as one or more short texts; a query phrase is matched against all of
them and the best match counts (:class:`kgrag.embed.relations.RelationTextVectors`). The texts,
most trusted first:

1. **labels** -- ``graph.relation_labels[name]`` (a label and its aliases, e.g. a Wikidata
   graph's ``P57`` -> ``["director", "directed by"]``), given to
   :class:`~kgrag.graph.memory.KnowledgeGraph` as a mapping, a second file or networkx edge
   attributes;
2. **description** -- ``graph.relation_descriptions[name]``, only when there is no label;
3. **identifier words** -- the name itself made readable (:func:`identifier_texts`), unless it
   is opaque (``P57``, ``r12``: no words in it) and something else describes it.

Path-like identifiers (Freebase's ``people.person.place_of_birth``, PathQuestion's
``__people__person__place_of_birth``, URIs) give two texts, the last segment in words first
("place of birth") and the whole path ("people person place of birth"): a person writes the
property, not its domain, and embedding only the whole path lets relations that share domain
words crowd the right one out (measured in docs/results.md, "Relation wording").

>>> relation_texts_for("people.person.place_of_birth")
['place of birth', 'people person place of birth']
>>> relation_texts_for("P57", labels=["director"], description="director of the film")
['director']
>>> relation_texts_for("P57", description="director of the film")
['director of the film']
>>> relation_texts_for("directed_by")
['directed by']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kgrag.text.names import relation_words

#: Separators of path-like identifiers: ``.``, ``/``, ``:``, ``#`` and double underscores.
_PATH_SEPARATORS = re.compile(r"[./:#]+|__+")
#: Identifiers without words: ``P57``, ``r12``, ``123``, hex digests.
_OPAQUE = re.compile(r"^(?:[A-Za-z]{0,2}\d+|[0-9a-fA-F\-]{16,})$")


def is_opaque(name: str) -> bool:
    """Whether ``name`` carries no words an embedder could use (``P57``, ``R3``, ``1234``)."""
    return bool(_OPAQUE.match(name.strip()))


def _segments(name: str) -> list[str]:
    text = name.strip().strip("<>")
    if "://" in text:  # a URI: only its last segment (or fragment) names the property
        text = re.split(r"[/#]", text.rstrip("/#"))[-1]
    return [s for s in _PATH_SEPARATORS.split(text) if s.strip("_-")]


def identifier_texts(name: str) -> list[str]:
    """The readable forms of an identifier: last path segment in words, then the whole path.

    >>> identifier_texts("__music__release_track__recording")
    ['recording', 'music release track recording']
    >>> identifier_texts("http://dbpedia.org/ontology/birthPlace")
    ['birth place']
    >>> identifier_texts("placeOfBirth")
    ['place of birth']
    """
    parts = _segments(name)
    if not parts:
        return [relation_words(name)]
    last = relation_words(parts[-1])
    whole = relation_words(" ".join(parts))
    return [last] if last == whole else [last, whole]


def _unique(texts: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for text in texts:
        text = " ".join(str(text).split())
        if text and text.casefold() not in seen:
            seen[text.casefold()] = text
    return list(seen.values())


def relation_texts_for(name: str, *, labels: Iterable[str] = (),
                       description: str | None = None) -> list[str]:
    """The texts embedded for relation ``name`` (see the module docstring for the order)."""
    texts = _unique(labels)
    if not texts and description:
        texts = _unique([description])
    if not (texts and is_opaque(name)):
        texts = _unique(texts + identifier_texts(name))
    return texts


class RelationTextSource(Protocol):
    """What the texts of a graph's relations are read from: every
    :class:`~kgrag.graph.base.GraphStore` (the in-memory graph, the database stores) is one.
    Declared here, below the graph layer, so this module needs nothing from it."""

    @property
    def relation_labels(self) -> Mapping[str, Sequence[str]]: ...

    @property
    def relation_descriptions(self) -> Mapping[str, str]: ...

    def list_relations(self) -> list[str]: ...


def relation_labels_of(graph: RelationTextSource) -> Mapping[str, Sequence[str]]:
    """``graph.relation_labels`` (empty when the graph has no labels)."""
    return graph.relation_labels


def relation_texts(graph: RelationTextSource, relation: str | int) -> list[str]:
    """The texts an embedder reads for one relation of ``graph`` (name or relation id, the
    position in ``graph.list_relations()``).

    Pure: the same graph and relation always give the same texts, so an embedding cache may
    key on them.
    """
    name = relation if isinstance(relation, str) else str(graph.list_relations()[int(relation)])
    return relation_texts_for(name, labels=graph.relation_labels.get(name, ()),
                              description=graph.relation_descriptions.get(name))


def all_relation_texts(graph: RelationTextSource, names: Iterable[str] | None = None
                       ) -> list[list[str]]:
    """:func:`relation_texts` of every relation (``names``: these relations, in this order)."""
    if names is None:
        names = graph.list_relations()
    return [relation_texts(graph, str(n)) for n in names]


def primary_relation_text(graph: RelationTextSource, relation: str | int) -> str:
    """The single most trusted text of a relation (for prompts and one-vector consumers)."""
    return relation_texts(graph, relation)[0]
