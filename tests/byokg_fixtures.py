"""Shared toy graphs for the ByoKG-RAG tests (the paper's own examples, notes §5)."""

from __future__ import annotations

from typing import Any, Iterable

from langchain_core.callbacks import BaseCallbackHandler

from kgrag import KnowledgeGraph
from kgrag.graph.temporal import temporal_to_triples

WORLD = [
    ("Jamaica", "language_spoken", "English"),
    ("Jamaica", "capital", "Kingston"),
    ("English", "countries_spoken_in", "USA"),
    ("English", "countries_spoken_in", "England"),
    ("USA", "president", "Joe Biden"),
    ("m.0_yv0g3", "organization.leadership.person", "Stan Kasten"),
    ("m.0_yv0g3", "organization.leadership.organization", "Los Angeles Dodgers"),
    ("Stan Kasten", "business.board_member.leader_of", "m.0_yv0g3"),
] + [("Los Angeles Dodgers", "sports.sports_team.championships", f"{y} World Series")
     for y in (1959, 1963, 1965, 1981, 1988)]

WORLD_SERIES = {f"{y} World Series" for y in (1959, 1963, 1965, 1981, 1988)}

# CronQuestions-style temporal facts (paper Table 9), folded into triples.
TEMPORAL = temporal_to_triples([
    ("Francis Pym, Baron Pym", "position held",
     "Member of the 48th Parliament of the United Kingdom", (1979, 1983)),
    ("Francis Pym, Baron Pym", "position held",
     "Member of the 47th Parliament of the United Kingdom", (1974, 1979)),
    ("Per Kleppe", "position held", "Minister of Finance of Norway", (1973, 1979)),
    ("Ulf Sand", "position held", "Minister of Finance of Norway", (1986, 1988)),
])


def world_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(WORLD + TEMPORAL)


class DelegatingStore:
    """A GraphStore that is *not* a KnowledgeGraph (exercises the name-level code paths).

    It forwards the protocol's name-level operations to an in-memory graph and, when
    ``cypher_rows`` is given, pretends to run Cypher: it records each query and returns the
    scripted rows, or raises the scripted exception.
    """

    def __init__(self, kg: KnowledgeGraph, cypher_rows: Iterable[Any] | None = None) -> None:
        self._kg = kg
        self.supports_cypher = cypher_rows is not None
        self._cypher = list(cypher_rows or [])
        self.queries: list[str] = []

    def run_cypher(self, query: str, params: dict | None = None) -> list[dict]:
        self.queries.append(query)
        reply = self._cypher.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    def __getattr__(self, name: str) -> Any:
        if name in ("counts", "has_node", "iter_node_names", "list_relations", "one_hop",
                    "follow_path", "shortest_paths", "k_hop_subgraph", "schema_summary", "degree",
                    "relation_labels", "relation_descriptions", "aliases", "annotations"):
            return getattr(self._kg, name)
        raise AttributeError(name)


class PromptLog(BaseCallbackHandler):
    """Records the text of every prompt a LangChain chat model receives (system + user)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def on_chat_model_start(self, serialized, messages, **kwargs):
        self.prompts.append("\n".join(str(m.content) for m in messages[0]))
