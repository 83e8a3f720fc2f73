"""How query tokens name a graph's relations and entities (``P<digits>`` / ``Q<digits>`` ids).

The paper has the LLM refer to relations by identifier (Wikidata ``P`` ids) rather than by label,
and the prompt lists every relation as *id: label*. A kgrag graph names relations and nodes by
strings, so :class:`GraphVocabulary` fixes one id scheme per graph:

* If every relation name already looks like ``P<digits>`` (a Wikidata-style graph), those names
  are the ids. Otherwise relation ``i`` (its position in ``kg.relation_names``) has id ``P<i>``
  and its name is the label.
* Likewise entity ids are the node names when all are ``Q<digits>``, else ``Q<i>`` for node ``i``.

Resolution of a relation token tries, in order: the id table, the exact relation name (with the
inverse suffix glued back on first, so a graph relation literally named ``x_inv`` still matches),
then the name with the suffix removed as an inverse traversal. A relation written in words -- its
label, or the last segment of a path-like id (``"place of birth"`` for
``people.person.place_of_birth``) -- is bound by :meth:`GraphVocabulary.expand_written_relations`
before execution (:mod:`kgrag.linking.relation_names`); words that fit several relations become the
union (``OR``) of the projections along each. Optionally (``relation_backoff``, off by default --
the notes' "soft extra (a)", our extension) an unknown relation *label* falls back to the lexically
closest relation name (``"director"`` -> ``directed_by``). Entity tokens: unquoted ``Q<digits>``
ids, then exact node names, then aliases (case-insensitive last). Anything else is a
:class:`~kgrag.methods.ultrag.query.QueryResolutionError` -- or, for quoted mentions, is left to the
entity linker. """

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kgrag.graph.base import IdIndexedGraph
from kgrag.graph.memory import KnowledgeGraph, normalize_name  # noqa: F401 (doctests)
from kgrag.linking.relation_names import RelationTextIndex
from kgrag.methods.ultrag.query import (
    Entity,
    Intersection,
    Negation,
    Projection,
    Query,
    QueryResolutionError,
    Relation,
    Union_,
)
from kgrag.text.suggest import close_matches, did_you_mean

#: Relations a written name may expand to (a union of that many projections at most).
MAX_WRITTEN_MATCHES = 16
#: Relations an "unknown relation" error lists (the closest first when the graph has more).
LISTED_RELATIONS = 12

_P_ID = re.compile(r"^P\d+$")
_Q_ID = re.compile(r"^Q\d+$")


def _id_number(token: str) -> int | None:
    """The number of a ``Q<digits>`` / ``P<digits>`` id; ``None`` for more than 18 digits (no
    graph has that many ids, and ``int()`` refuses more than 4,300 digits)."""
    digits = token[1:].lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else None


class GraphVocabulary:
    """Id tables of one graph; ``resolve_relation`` / ``resolve_entity`` bind query tokens."""

    def __init__(self, relation_names: Sequence[str], node_names: Sequence[str],
                 node_index: dict[str, int] | None = None,
                 aliases: Mapping[str, Sequence[str]] | None = None, *,
                 relation_backoff: float | None = None,
                 relation_texts: RelationTextIndex | None = None) -> None:
        self.relation_names = list(relation_names)
        #: relations by the words people write for them (labels, last path segments)
        self.relation_texts = relation_texts
        self.relation_index = {r: i for i, r in enumerate(self.relation_names)}
        self.node_names = node_names
        self.node_index = node_index if node_index is not None else {
            n: i for i, n in enumerate(node_names)}
        self.relation_ids_are_names = bool(self.relation_names) and all(
            _P_ID.match(r) for r in self.relation_names)
        self.entity_ids_are_names = len(node_names) > 0 and all(
            _Q_ID.match(n) for n in node_names)
        #: off (``None``) by default; a score in 0-100 enables lexical relation back-off
        self.relation_backoff = relation_backoff
        self._relation_keys: list[str] | None = None
        self._alias_index: dict[str, int] = {}
        self._folded_index: dict[str, int] | None = None
        for name, names in (aliases or {}).items():
            node = self.node_index.get(name)
            if node is not None:
                for alias in names:
                    self._alias_index.setdefault(alias, node)

    @classmethod
    def from_graph(cls, kg: IdIndexedGraph, **options: float | None) -> GraphVocabulary:
        return cls(kg.relation_names, kg.node_names, kg.node_index, kg.aliases,
                   relation_texts=RelationTextIndex.from_graph(kg), **options)

    # ---------------------------------------------------------------- relations in words
    def written_relations(self, relation: Relation) -> tuple[list[int], bool]:
        """``(relation ids, inverse)`` a token written in words names; no ids when it is an id
        or an exact name (resolved as usual) or names nothing."""
        if self.relation_texts is None or self.is_exact(relation):
            return [], relation.inverse
        names, inverse = self.relation_texts.lookup(relation.name), relation.inverse
        if not names and relation.inverse:  # words that merely end like an inverse suffix
            names, inverse = self.relation_texts.lookup(relation.name + relation.suffix), False
        return [self.relation_index[n] for n in names[:MAX_WRITTEN_MATCHES]
                if n in self.relation_index], inverse

    def expand_written_relations(self, query: Query) -> Query:
        """``query`` with every relation written in words bound to the graph's relation names;
        a written name fitting several relations becomes ``OR`` of one projection per relation.

        >>> kg = KnowledgeGraph.from_triples([("a", "film.film.genre", "b"),
        ...                                   ("c", "music.album.genre", "d")])
        >>> from kgrag.methods.ultrag.query import parse_query, to_dsl
        >>> to_dsl(GraphVocabulary.from_graph(kg).expand_written_relations(
        ...     parse_query('Q0 -> "genre"')))
        'OR(Q0 -> film.film.genre, Q0 -> music.album.genre)'
        """
        if isinstance(query, Projection):
            operand = query.operand if isinstance(query.operand, Entity) else \
                self.expand_written_relations(query.operand)
            ids, inverse = self.written_relations(query.relation)
            bound = [Projection(operand, Relation(self.relation_names[i], inverse))
                     for i in ids]
            if not bound:
                return query if operand is query.operand else Projection(operand, query.relation)
            return bound[0] if len(bound) == 1 else Union_(tuple(bound))
        if isinstance(query, (Intersection, Union_)):
            return type(query)(tuple(self.expand_written_relations(q) for q in query.operands))
        if isinstance(query, Negation):
            return Negation(self.expand_written_relations(query.operand))
        return query

    # ---------------------------------------------------------------- ids for prompts / output
    def relation_id(self, rel: int) -> str:
        return self.relation_names[rel] if self.relation_ids_are_names else f"P{rel}"

    def entity_id(self, node: int) -> str:
        return self.node_names[node] if self.entity_ids_are_names else f"Q{node}"

    # ---------------------------------------------------------------------------- resolution
    def resolve_relation(self, relation: Relation) -> tuple[int, bool]:
        """``(relation id, inverse)`` for a relation token, or :class:`QueryResolutionError`."""
        name = relation.name
        if relation.inverse:
            glued = self._lookup_relation(name + relation.suffix)
            if glued is not None:  # the graph has a relation literally named like this
                return glued, False
        found = self._lookup_relation(name)
        if found is None and self.relation_backoff is not None:
            found = self.backoff_relation(name)
        if found is None:
            raise QueryResolutionError(self.unknown_relation_message(name))
        return found, relation.inverse

    def unknown_relation_message(self, token: str) -> str:
        """Why ``token`` names no relation, with the closest relations ("did you mean") and
        the graph's relations to choose from (the closest first on a large vocabulary)."""
        names = self.relation_names
        if not names:
            return (f"unknown relation {token!r}: this graph has no relations (it holds no "
                    "triples)")
        shown = close_matches(token, names, limit=LISTED_RELATIONS, min_score=0)
        if len(names) <= LISTED_RELATIONS:
            shown = names
        listed = ", ".join(self._relation_entry(self.relation_index[n]) for n in shown)
        more = f", ... ({len(names) - len(shown)} more)" if len(names) > len(shown) else ""
        ids = ("" if self.relation_ids_are_names else
               f"; P0..P{len(names) - 1} are UltRAG's own numbers for this graph's relations "
               "(their positions in its relation list), not Wikidata ids")
        return (f"unknown relation {token!r}{did_you_mean(token, names)}; this graph's "
                f"{len(names)} relation{'s' * (len(names) != 1)}: {listed}{more}{ids}")

    def _relation_entry(self, rel: int) -> str:
        name = self.relation_names[rel]
        return name if self.relation_ids_are_names else f"{name} (P{rel})"

    def is_exact(self, relation: Relation) -> bool:
        """Whether the token names a relation without back-off."""
        if relation.inverse and self._lookup_relation(relation.name + relation.suffix) is not None:
            return True
        return self._lookup_relation(relation.name) is not None

    def backoff_relation(self, token: str) -> int | None:
        """The relation whose label best matches ``token`` lexically, if it scores at least
        ``relation_backoff`` (0-100, rapidfuzz ``partial_ratio`` on case-folded word keys, so
        "director" finds "directed by" and "writer" finds "written by"; ties: first relation)."""
        from rapidfuzz import fuzz, process

        from kgrag.linking import name_key

        if _P_ID.match(token) and not self.relation_ids_are_names:
            return None  # an id out of range is an error, not a label to guess from
        if self._relation_keys is None:
            self._relation_keys = [name_key(r) for r in self.relation_names]
        key = name_key(token)
        if len(key) < 4 or not self._relation_keys:  # "by", "of": too short to mean anything
            return None
        best = process.extractOne(key, self._relation_keys, scorer=fuzz.partial_ratio,
                                  processor=None, score_cutoff=self.relation_backoff)
        return None if best is None else int(best[2])

    def _lookup_relation(self, token: str) -> int | None:
        if self.relation_ids_are_names:
            return self.relation_index.get(token)
        if _P_ID.match(token):
            rel = _id_number(token)
            if rel is not None and rel < len(self.relation_names):
                return rel
        return self.relation_index.get(normalize_name(token))

    def resolve_entity(self, entity: Entity, *, required: bool = True) -> int | None:
        """Leaf's node id; unknown: :class:`QueryResolutionError`, or ``None`` if not required."""
        text = entity.text
        if not entity.quoted and _Q_ID.match(text) and not self.entity_ids_are_names:
            node = _id_number(text)
            if node is not None and node < len(self.node_names):
                return node
            if required:
                count = len(self.node_names)
                where = (f"this graph's {count} entities are Q0..Q{count - 1}" if count
                         else "this graph has no entities")
                raise QueryResolutionError(
                    f"entity id {text[:40]!r} is out of range: {where} (UltRAG's own numbers, "
                    "the entities' positions in the graph, not Wikidata ids; or name the "
                    "entity in double quotes)")
            return None
        key = normalize_name(text)
        node = self.node_index.get(key)
        if node is None:
            node = self._alias_index.get(key)
        if node is None:
            node = self._folded().get(key.casefold())
        if node is None and required:
            raise QueryResolutionError(f"unknown entity {text!r}: not an entity id, node name or "
                                       f"alias of this graph{did_you_mean(text, self.node_names)}")
        return node

    def _folded(self) -> dict[str, int]:
        """Case-folded names and aliases (built on first use; first node wins on a clash)."""
        if self._folded_index is None:
            folded: dict[str, int] = {}
            for node, name in enumerate(self.node_names):
                folded.setdefault(name.casefold(), node)
            for name, node in self._alias_index.items():
                folded.setdefault(name.casefold(), node)
            self._folded_index = folded
        return self._folded_index
