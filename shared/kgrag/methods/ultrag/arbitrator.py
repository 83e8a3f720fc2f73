"""Arbitrators: turn the executor's ranking into the final answer set.

* :class:`LLMArbitrator` -- the paper's: the LLM sees the top-50 candidates with their
  probabilities and returns the answers (it may drop executor mistakes or add what it knows).
* :class:`MarginArbitrator` -- an LLM-free stand-in for offline use: the top candidate plus every
  candidate within ``margin`` of the top score (and, optionally, at or above ``threshold``).

Candidates are ``(id, name, probability)`` triples sorted best first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from kgrag.llm import extract_tag
from kgrag.llm.steps import acomplete_answer, complete_answer
from kgrag.methods.ultrag.prompts import arbitration_prompt

Candidate = tuple[str, str, float]

_ID_TOKEN = re.compile(r"\bQ\d+\b")
_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)])\s*")


@runtime_checkable
class Arbitrator(Protocol):
    def arbitrate(self, question: str, query_text: str,
                  candidates: Sequence[Candidate]) -> list[str]: ...


class MarginArbitrator:
    """Top-1 plus everything within ``margin`` of the top score (LLM-free).

    ``threshold`` (optional) additionally admits every candidate scoring at least that much;
    ``max_answers`` caps the set. With crisp (0/1) execution every answer ties at 1, so the
    whole crisp answer set is returned.
    """

    def __init__(self, margin: float = 0.05, threshold: float | None = None,
                 max_answers: int = 50) -> None:
        if margin < 0:
            raise ValueError("margin must be >= 0")
        self.margin = margin
        self.threshold = threshold
        self.max_answers = max_answers
        self.calls = 0

    def arbitrate(self, question: str, query_text: str,
                  candidates: Sequence[Candidate]) -> list[str]:
        if not candidates:
            return []
        top = candidates[0][2]
        if top <= 0:
            return []
        keep = [name for _, name, score in candidates
                if score >= top - self.margin
                or (self.threshold is not None and score >= self.threshold)]
        return keep[: self.max_answers]


def parse_answers(reply: str, candidates: Sequence[Candidate]) -> list[str]:
    """Map an arbitration reply to answer names.

    Reads the ``<answers>`` tag (or the whole reply when the tag is missing), one item per line;
    a line that is not a known id or name is split on commas. An item is matched to a candidate
    by id (``Q12``), then by name (case-insensitive); other free text is kept as the model wrote
    it (the paper lets the arbitrator use its own knowledge). A bare id that is not a candidate
    is dropped. Order follows the reply; duplicates are dropped.
    """
    body = extract_tag(reply or "", "answers")
    if body is None:
        body = reply or ""
    by_id = {cid: name for cid, name, _ in candidates}
    by_name = {name.casefold(): name for _, name, _ in candidates}

    def match(item: str) -> str | None:
        item = item.strip().strip("`\"'").strip()
        if not item:
            return None
        if item in by_id:
            return by_id[item]
        first = item.split("|")[0].strip()
        if first in by_id:
            return by_id[first]
        if item.casefold() in by_name:
            return by_name[item.casefold()]
        ids = _ID_TOKEN.findall(item)
        if len(ids) == 1 and ids[0] in by_id:
            return by_id[ids[0]]
        return None

    answers: dict[str, None] = {}
    for line in body.splitlines()[:500]:
        line = _BULLET.sub("", line).strip()
        if not line or line.lower() in ("none", "(none)", "no answer"):
            continue
        whole = match(line)
        if whole is not None:
            answers.setdefault(whole)
            continue
        for part in line.split(","):
            found = match(part)
            part = part.strip().strip("`\"'").strip()
            if found is not None:
                answers.setdefault(found)
            elif part and not _ID_TOKEN.fullmatch(part):
                # free text: an entity the executor missed, or the model's own answer
                answers.setdefault(part)
    return list(answers)


class LLMArbitrator:
    """The paper's arbitrator: one LLM call over the top candidates (default 50)."""

    def __init__(self, llm: Any, prompts: Any = None) -> None:
        from kgrag.llm import as_llm
        from kgrag.llm.prompts import PromptSet
        from kgrag.methods.ultrag.prompts import PROMPTS

        self.llm = as_llm(llm, what="UltRAG's LLM arbitrator")
        #: the templates (shared with the UltRAG instance that built this arbitrator)
        self.prompts = prompts if prompts is not None else PromptSet(PROMPTS, method="UltRAG")

    def prompt(self, question: str, query_text: str, candidates: Sequence[Candidate]) -> str:
        return arbitration_prompt(question, query_text, candidates,
                                  template=self.prompts.template("arbitration"))

    def arbitrate(self, question: str, query_text: str,
                  candidates: Sequence[Candidate]) -> list[str]:
        """One ``answer`` call (re-asked once when blank; then :class:`LLMOutputError`)."""
        reply = complete_answer(self.llm, self.prompt(question, query_text, candidates),
                                system=self.prompts.template("arbitration_system"))
        return parse_answers(reply, candidates)

    async def aarbitrate(self, question: str, query_text: str,
                         candidates: Sequence[Candidate]) -> list[str]:
        reply = await acomplete_answer(self.llm, self.prompt(question, query_text, candidates),
                                       system=self.prompts.template("arbitration_system"))
        return parse_answers(reply, candidates)
