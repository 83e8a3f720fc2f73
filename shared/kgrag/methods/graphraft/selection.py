"""Choosing among the candidate queries so that the choice is always one of them.

Three selectors share one interface, ``select(question, candidates, m) -> list[int]`` (indices
into ``candidates``, best first, distinct, at most ``m``):

* :class:`ConstrainedDecodingSelector` -- the paper's method: trie-constrained beam search over
  any :class:`~kgrag.methods.graphraft.decoding.TokenScorer` (e.g. a fine-tuned HF model).
* :class:`ChatChoiceSelector` -- for chat LLMs without token scores: a numbered-list prompt whose
  reply is validated against the list, with a bounded re-ask.
* :class:`EmbeddingSelector` -- LLM-free: cosine similarity of the question to each pattern's
  verbalisation, ties broken by fewer results (a cheap baseline, not in the paper).
"""

from __future__ import annotations

import re
from typing import Any, Protocol, Sequence

import numpy as np

from kgrag.errors import LLMOutputError
from kgrag.graph.base import GraphStore
from kgrag.llm import acomplete_and_parse, complete_and_parse
from kgrag.methods.graphraft.decoding import TokenScorer, constrained_beam_search
from kgrag.methods.graphraft.enumeration import Candidate
from kgrag.methods.graphraft.prompts import SELECT_SYSTEM, selection_prompt


class QuerySelector(Protocol):
    def select(self, question: str, candidates: Sequence[Candidate], m: int) -> list[int]: ...


class ConstrainedDecodingSelector:
    """Beam search of width ``m`` restricted to the candidates' token trie (paper §4.2)."""

    def __init__(self, scorer: TokenScorer) -> None:
        self.scorer = scorer

    def select(self, question: str, candidates: Sequence[Candidate], m: int) -> list[int]:
        ranked = constrained_beam_search(self.scorer, question, [c.text for c in candidates],
                                         beam_width=m)
        return [i for i, _ in ranked]


#: a list marker opening a line ("1. ", "2) ", "- "): numbering, not a choice
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*\u2022])\s+")
#: words a line of choices may hold besides the numbers ("queries 3 and 1")
_CHOICE_WORDS = re.compile(r"(?i)\b(?:and|or|then|query|queries|number|numbers)\b")


def _is_choice_line(body: str) -> bool:
    return not re.search(r"[^\W\d_]{2,}", _CHOICE_WORDS.sub(" ", body))


def parse_choice(reply: str, n_candidates: int, m: int) -> list[int]:
    """Validated 0-based indices from a reply like ``"3, 1"``; raises LLMOutputError if none.

    Read as a person reads it: a list marker opening a line (``"1. 3, 2"``) is numbering,
    not a choice; lines of numbers are read in order, and the first line of prose after a
    choice ends the reply -- a small model that echoes the instruction ("3, 1 / Reply with the
    numbers of the 5 most useful queries (for example: 2, 4)") chose 3 and 1, not 5, 2 and 4.
    A reply of prose only ("Query 3 is best, then 1") gives the numbers of its first line
    that has any. A digit run longer than ``n_candidates`` has digits cannot name a candidate
    and is skipped without converting it (Python refuses ``int()`` of more than 4,300 digits).
    """
    picked: list[int] = []
    width = len(str(max(n_candidates, 1)))
    seen_tokens = 0
    for line in (reply or "").splitlines():
        body = _LIST_MARKER.sub("", line, count=1)
        tokens = re.findall(r"\d+", body)
        if not tokens:
            continue
        prose = not _is_choice_line(body)
        if prose and picked:
            break
        for token in tokens:
            seen_tokens += 1
            if seen_tokens > 10 * max(m, 1):
                break
            digits = token.lstrip("0") or "0"
            if len(digits) > width:
                continue
            index = int(digits) - 1
            if 0 <= index < n_candidates and index not in picked:
                picked.append(index)
            if len(picked) == m:
                return picked
        if prose:
            break
    if not picked:
        raise LLMOutputError(
            f"no valid candidate number (1..{n_candidates}) in {(reply or '')[:120]!r}")
    return picked


class ChatChoiceSelector:
    """Numbered-candidates prompt for chat models; output validated against the list."""

    def __init__(self, llm: Any, *, retries: int = 1, prompts: Any = None) -> None:
        self.llm = llm
        self.retries = retries
        #: a :class:`~kgrag.llm.prompts.PromptSet` with ``select`` / ``select_system``
        self.prompts = prompts

    def _prompt(self, question: str, candidates: Sequence[Candidate], m: int) -> tuple[str, str]:
        texts = [c.text for c in candidates]
        if self.prompts is None:
            return selection_prompt(question, texts, m), SELECT_SYSTEM
        return (selection_prompt(question, texts, m, template=self.prompts.template("select")),
                self.prompts.template("select_system"))

    def select(self, question: str, candidates: Sequence[Candidate], m: int) -> list[int]:
        if not candidates:
            return []
        prompt, system = self._prompt(question, candidates, m)
        picked, _ = complete_and_parse(
            self.llm, prompt, lambda reply: parse_choice(reply, len(candidates), m),
            retries=self.retries, system=system, step="select")
        return picked

    async def aselect(self, question: str, candidates: Sequence[Candidate], m: int) -> list[int]:
        """Async :meth:`select` (awaits ``llm.acomplete``)."""
        if not candidates:
            return []
        prompt, system = self._prompt(question, candidates, m)
        picked, _ = await acomplete_and_parse(
            self.llm, prompt, lambda reply: parse_choice(reply, len(candidates), m),
            retries=self.retries, system=system, step="select")
        return picked


class EmbeddingSelector:
    """LLM-free: most similar verbalised pattern first; ties by fewer results, then text.

    ``graph``: relations with a label or description (``relation_labels`` /
    ``relation_descriptions``) are verbalised by their most trusted text
    (:func:`kgrag.text.relations.primary_relation_text`: ``P57`` -> "director"); others by
    name, as measured in docs/results.md.
    """

    def __init__(self, embedder: Any, graph: GraphStore | None = None) -> None:
        self.embedder = embedder
        self.graph = graph

    def relation_text(self, relation: str) -> str:
        graph = self.graph
        if graph is not None and (graph.relation_labels.get(relation)
                                  or graph.relation_descriptions.get(relation)):
            from kgrag.text.relations import primary_relation_text

            return primary_relation_text(graph, relation)
        return relation

    def select(self, question: str, candidates: Sequence[Candidate], m: int) -> list[int]:
        if not candidates:
            return []
        q = self.embedder.embed_query(question)
        vecs = self.embedder.embed_documents([c.pattern.verbalize(self.relation_text)
                                              for c in candidates])
        sims = np.asarray(vecs) @ np.asarray(q)
        order = sorted(range(len(candidates)),
                       key=lambda i: (-round(float(sims[i]), 6), candidates[i].total,
                                      candidates[i].text))
        return order[:m]
