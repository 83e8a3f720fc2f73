"""Oracles: what a perfect LLM would hand each method, built from a question's gold relation path.

The evaluation's oracle mode measures retrieval alone: instead of asking an LLM, it gives each
method the artifact a correct LLM would have written, through the method's own LLM-free entry
point, and scores what retrieval then returns. The artifacts (from the method engineers' oracle
benchmarks, gathered here so every run shares one definition):

* **ByoKG-RAG** -- :class:`ByoKGOracleLLM`, a scripted KG-Linker: the gold topic entity and the
  gold relation path written plainly (no direction markers, as an LLM reading the schema would);
  in the agentic step it selects the gold relations, then says FINISH.
* **SimGRAG** -- :func:`simgrag_pattern`: the topic entity as written in the question, one
  ``UNKNOWN <type> <i>`` placeholder per hop, each relation as a short natural phrase, in the
  direction the relation is stored.
* **UltRAG** -- :func:`ultrag_query`: the DSL ``Q<topic id> -> P<r1> -> P<r2>_inv ...``
  (:func:`ultrag_branches_query`: ``AND`` of one chain per branch of a conjunctive question).

Questions of your own may carry several gold branches meeting at the answer
(:attr:`~kgrag.eval.datasets.QAExample.gold_branches`): SimGRAG's pattern then has one chain per
branch into one shared answer placeholder, ByoKG-RAG's linker writes every branch's path, and
GraphRAFT (templates of one path) selects nothing.
* **GraphRAFT** -- :class:`GraphRAFTOracleSelector`: with the gold topic entity linked, choose
  the enumerated candidate whose relations equal the gold path (GraphRAFT's templates are
  undirected and reach at most two hops, so a 3-hop gold path is never enumerated and the oracle
  then selects nothing; the context is the method's vector top-up).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kgrag.eval.datasets import QAExample

_P_ID = re.compile(r"^P\d+$")

#: How a question writer names MetaQA's relations (not the KB's identifiers).
METAQA_PHRASES = {
    "starred_actors": "starring", "directed_by": "director", "written_by": "writer",
    "has_genre": "genre", "in_language": "language", "release_year": "release year",
    "has_tags": "tag", "has_imdb_rating": "imdb rating", "has_imdb_votes": "imdb votes",
}
#: MetaQA question-type words -> the placeholder type a pattern writer would use.
METAQA_TYPES = {"movie": "movie", "actor": "actor", "director": "person", "writer": "person",
                "genre": "genre", "language": "language", "year": "year", "tags": "tag",
                "tag": "tag", "imdbrating": "rating", "imdbvotes": "votes", "rating": "rating",
                "votes": "votes"}


def relation_phrase(relation: str, labels: Any = None) -> str:
    """``directed_by`` -> ``director`` (MetaQA's table), else underscores to spaces.

    With ``labels`` (a graph's ``relation_labels``) a relation with a label is phrased from
    its first label, as a pattern writer reading the label would: a Wikidata-style ``P3``
    labelled "directed by" -> ``director``.

    >>> relation_phrase("P3", {"P3": ["directed by"]}), relation_phrase("place_of_birth")
    ('director', 'place of birth')
    """
    if labels and labels.get(relation):
        relation = str(labels[relation][0])
    key = re.sub(r"[^0-9a-z]+", "_", relation.casefold()).strip("_")
    return METAQA_PHRASES.get(relation, METAQA_PHRASES.get(key, relation.replace("_", " ")))


def require_gold_path(example: QAExample) -> None:
    if not example.entities or not example.relation_path:
        raise ValueError(f"question {example.id or example.question!r} has no gold topic entity "
                         "and relation path: the oracle mode needs MetaQA or PathQuestion")


# ---------------------------------------------------------------------- SimGRAG
def simgrag_pattern(example: QAExample, labels: Any = None
                    ) -> tuple[list[tuple[str, str, str]], str]:
    """The oracle pattern triples and the placeholder that stands for the answer
    (``labels``: the graph's relation labels, see :func:`relation_phrase`).

    >>> from kgrag.eval.datasets import metaqa_relation_path
    >>> ex = QAExample("who directed [Paprika]", ("Satoshi Kon",), ("Paprika",),
    ...                metaqa_relation_path("movie_to_director"), "movie_to_director")
    >>> simgrag_pattern(ex)
    ([('Paprika', 'director', 'UNKNOWN person 1')], 'UNKNOWN person 1')
    """
    require_gold_path(example)
    if len(example.gold_branches) > 1:
        return _simgrag_branches(example, labels)
    types: list[str] = []
    if "_to_" in example.qtype:
        types = [METAQA_TYPES.get(t, t) for t in example.qtype.split("_to_")]
    nodes = [example.entities[0]]
    counts: dict[str, int] = {}
    for i in range(len(example.relation_path)):
        kind = types[i + 1] if len(types) > i + 1 else "entity"
        counts[kind] = counts.get(kind, 0) + 1
        nodes.append(f"UNKNOWN {kind} {counts[kind]}")
    triples = []
    for i, step in enumerate(example.relation_path):
        rel = relation_phrase(step.relation, labels)
        a, b = nodes[i], nodes[i + 1]
        triples.append((a, rel, b) if step.direction == "out" else (b, rel, a))
    return triples, nodes[-1]


def _simgrag_branches(example: QAExample, labels: Any = None
                      ) -> tuple[list[tuple[str, str, str]], str]:
    """Several gold branches meeting at the answer: one chain per branch, from its entity
    through its own placeholders to the one shared answer placeholder."""
    answer = "UNKNOWN answer 1"
    triples, count = [], 0
    for entity, steps in example.gold_branches:
        nodes = [entity]
        for _ in steps[:-1]:
            count += 1
            nodes.append(f"UNKNOWN entity {count}")
        nodes.append(answer)
        for i, step in enumerate(steps):
            rel, a, b = relation_phrase(step.relation, labels), nodes[i], nodes[i + 1]
            triples.append((a, rel, b) if step.direction == "out" else (b, rel, a))
    return triples, answer


# ---------------------------------------------------------------------- UltRAG
def ultrag_query(relation_index: Any, topic_id: int, steps: Sequence[Any]) -> str:
    """The DSL a perfect LLM would write: the topic's id projected along the gold path.

    ``relation_index`` maps relation names to ids (``KnowledgeGraph.relation_index``).
    """
    ids_are_names = _p_named(relation_index)
    text = f"Q{topic_id}"
    for step in steps:
        if step.relation not in relation_index:
            raise ValueError(f"gold relation {step.relation!r} is not in the graph")
        token = step.relation if ids_are_names else f"P{relation_index[step.relation]}"
        text += f" -> {token}" + ("_inv" if step.direction == "in" else "")
    return text


def _p_named(relation_index: Any) -> bool:
    """Whether every relation is named like a Wikidata id (``P57``): UltRAG then uses the names
    as ids (:class:`~kgrag.methods.ultrag.vocabulary.GraphVocabulary`)."""
    return bool(relation_index) and all(_P_ID.match(str(r)) for r in relation_index)


def ultrag_branches_query(relation_index: Any, node_index: Any, example: QAExample) -> str:
    """The DSL for every gold branch: one projection chain each, ``AND``-ed when several.

    >>> from kgrag.graph.base import PathStep
    >>> ex = QAExample("q", ("x",), ("A", "B"), branches=(("A", (PathStep("r", "out"),)),
    ...                ("B", (PathStep("s", "in"),))))
    >>> ultrag_branches_query({"r": 0, "s": 1}, {"A": 3, "B": 4}, ex)
    'AND(Q3 -> P0, Q4 -> P1_inv)'
    """
    from kgrag.graph.memory import normalize_name

    parts = []
    for entity, steps in example.gold_branches:
        topic = node_index.get(normalize_name(entity))
        if topic is None:
            raise ValueError(f"gold entity {entity!r} is not in the graph")
        parts.append(ultrag_query(relation_index, topic, steps))
    return parts[0] if len(parts) == 1 else f"AND({', '.join(parts)})"


# ---------------------------------------------------------------------- ByoKG-RAG
class ByoKGOracleLLM:
    """A scripted LLM answering ByoKG-RAG's prompts as a perfect model would, for ``example``.

    Set :attr:`example` before each question. Prompts are told apart by their headings (the
    KG-Linker, the agentic relation choice, the agentic entity choice), as in
    ``benchmarks/byokg_metaqa_recall.py``.
    """

    LINKER_HEADING = "Given a question, the graph schema"
    RELATIONS_HEADING = "Choose the relations"
    EMPTY_CONTEXT = "Graph context:\n(none yet"

    def __init__(self) -> None:
        self.example: QAExample | None = None

    def __call__(self, prompt: str) -> str:
        ex = self.example
        if ex is None:
            raise RuntimeError("ByoKGOracleLLM: set .example before retrieving")
        if self.LINKER_HEADING in prompt:
            if self.EMPTY_CONTEXT not in prompt:  # iteration 2: the context is already there
                return "<entities>\nFINISH\n</entities>"
            paths = "\n".join(" -> ".join(step.relation for step in steps)
                              for _, steps in ex.gold_branches)
            topics = "\n".join(ex.entities)
            return (f"<entities>\n{topics}\n</entities>\n<paths>\n{paths}\n</paths>\n"
                    "<answers>\n</answers>")
        if self.RELATIONS_HEADING in prompt:
            gold = "\n".join(dict.fromkeys(step.relation for _, steps in ex.gold_branches
                                            for step in steps))
            return f"<selected>\n{gold}\n</selected>"
        return "<next-entities>\nFINISH\n</next-entities>"


# ---------------------------------------------------------------------- GraphRAFT
class GraphRAFTOracleSelector:
    """Selects the candidate queries whose relation sequence equals the gold path.

    GraphRAFT's templates match undirected, so directions are ignored. Only candidates starting
    at the gold topic entity count; 2path candidates (two named entities) never match a gold
    path from one topic. Set :attr:`example` before each question.
    """

    def __init__(self) -> None:
        self.example: QAExample | None = None

    def select(self, question: str, candidates: Sequence[Any], m: int) -> list[int]:
        ex = self.example
        if ex is None:
            raise RuntimeError("GraphRAFTOracleSelector: set .example before retrieving")
        if len(ex.gold_branches) > 1:  # conjunctive: GraphRAFT's templates have no match
            return []
        gold = tuple(step.relation for step in ex.relation_path)
        topics = {t.casefold() for t in ex.entities}
        picked = [i for i, c in enumerate(candidates)
                  if c.pattern.family != "2path" and tuple(c.pattern.relations) == gold
                  and c.pattern.source.casefold() in topics]
        return picked[:m]
