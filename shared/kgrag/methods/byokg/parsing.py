"""Defensive parsers for ByoKG-RAG's LLM replies (KG-Linker, agentic steps, final answer).

LLM output is untrusted. These parsers never raise on malformed replies (except
:func:`parse_linker_reply`, for a KG-Linker reply with no tag at all): a missing tag gives an
empty list, prose around the tags is ignored, bullets/numbering/quotes are stripped, and both
tag spellings the paper uses are accepted (``<answer>``/``<answers>``, ``<select>``/``<selected>``).

Duplicated tags (a model that "thinks aloud" and then writes its final tags) are resolved by
taking the **last non-empty** occurrence: reasoning comes first, the answer last. This differs
from the reference parser (first match) on purpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from kgrag.errors import LLMOutputError
from kgrag.llm.parsing import (
    MAX_REPLY_CHARS,
    echoed_instructions,
    extract_all_tags,
    split_items,
)
from kgrag.methods.byokg.prompts import FINISH

_ARROW = re.compile(r"\s*(?:->|→|=>|⇒|-->)\s*")
MAX_ITEMS = 50


@dataclass
class LinkerOutput:
    """The graph artifacts of one KG-Linker call (paper Eq. 1-4) plus its stop signal."""

    entities: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    query: str = ""
    answers: list[str] = field(default_factory=list)
    finish: bool = False


def _last_nonempty(text: str, tag: str, aliases: Iterable[str] = ()) -> str | None:
    found = extract_all_tags(text or "", tag, aliases=tuple(aliases))
    for body in reversed(found):
        if body.strip():
            return body
    return found[-1] if found else None


def tagged_items(text: str, tag: str, aliases: Iterable[str] = (),
                 max_items: int = MAX_ITEMS) -> list[str]:
    """Clean, de-duplicated lines of the last non-empty ``<tag>`` (``[]`` if absent)."""
    body = _last_nonempty(text, tag, aliases)
    if body is None:
        return []
    return [item.strip("`").strip() for item in split_items(body, max_items=max_items)
            if item.strip("`").strip()]


def _is_finish(item: str) -> bool:
    return item.strip().strip(".!").upper() == FINISH


def normalize_path(line: str) -> str:
    """``"r1 → r2"`` / ``"r1 => r2"`` / ``"r1->r2"`` become ``"r1 -> r2"``; empty steps dropped."""
    steps = [s.strip().strip("`'\"") for s in _ARROW.split(line.strip())]
    return " -> ".join(s for s in steps if s)


def strip_code_fence(query: str) -> str:
    """Remove Markdown code fences (```cypher ... ```) around a query."""
    q = query.strip()
    fence = re.match(r"^```[A-Za-z]*\s*\n?(.*?)\n?```$", q, re.DOTALL)
    return fence.group(1).strip() if fence else q


def parse_linker_output(reply: str) -> LinkerOutput:
    """Parse a KG-Linker reply; never raises.

    ``FINISH`` may come inside ``<entities>`` (paper Fig. 4), in ``<stop>`` or in the reference
    code's ``<task-completion>``; it is removed from the entity list and sets ``finish``.
    """
    text = (reply or "")[:MAX_REPLY_CHARS]
    raw_entities = tagged_items(text, "entities", aliases=("entity",))
    finish = any(_is_finish(e) for e in raw_entities)
    entities = [e for e in raw_entities if not _is_finish(e)]
    stop = _last_nonempty(text, "stop", aliases=("task-completion", "task_completion"))
    if stop is not None and _is_finish(stop):
        finish = True
    paths: list[str] = []
    for line in tagged_items(text, "paths", aliases=("path",)):
        path = normalize_path(line)
        if path and path not in paths:
            paths.append(path)
    query = strip_code_fence(_last_nonempty(text, "opencypher", aliases=("cypher",)) or "")
    answers = [a for a in tagged_items(text, "answers", aliases=("answer",)) if not _is_finish(a)]
    return LinkerOutput(entities=entities, paths=paths, query=query, answers=answers, finish=finish)


#: the KG-Linker's tags (and their aliases): a reply with none of them cannot be read
LINKER_TAGS = ("entities", "entity", "paths", "path", "opencypher", "cypher", "answers", "answer",
               "stop", "task-completion", "task_completion")


def parse_linker_reply(reply: str, *, instructions: str = "") -> LinkerOutput:
    """:func:`parse_linker_output` of a reply that must use the KG-Linker's tags: a reply with
    none of them (empty, prose, junk) is an :class:`LLMOutputError`, re-asked once and then
    handled by ``on_unusable_reply``. Tags present but empty (``<entities></entities>``) are
    a usable "nothing to link" reply -- unless the reply repeats the prompt's
    ``instructions`` (:func:`~kgrag.llm.parsing.echoed_instructions`): SmolLM2-135M answered
    most MetaQA questions by copying the task text, whose example tags then read as "no entity,
    no path" and sent the search nowhere."""
    text = (reply or "")[:MAX_REPLY_CHARS]
    if not extract_all_tags(text, LINKER_TAGS[0], aliases=LINKER_TAGS[1:]):  # one scan
        raise LLMOutputError(f"no KG-Linker tag (<entities>, <paths>, <answers>, ...) in the "
                             f"reply {text[:120]!r}")
    echo = echoed_instructions(text, instructions) if instructions else None
    if echo is not None:
        raise LLMOutputError(f"the reply repeats the prompt's instructions ({echo!r} ...) "
                             "instead of answering them")
    return parse_linker_output(text)


def _untagged_matches(text: str, candidates: Iterable[str]) -> list[str]:
    """Candidates that the reply wrote on a line of their own (fallback when tags are missing)."""
    wanted = {c.casefold(): c for c in candidates}
    found: list[str] = []
    for item in split_items(text[:MAX_REPLY_CHARS], max_items=10 * MAX_ITEMS):
        hit = wanted.get(item.strip("`").strip().casefold())
        if hit is not None and hit not in found:
            found.append(hit)
    return found


def parse_selected_relations(reply: str, candidates: Iterable[str]) -> list[str]:
    """Relations chosen in ``<selected>`` (or ``<select>``), restricted to ``candidates``.

    Matching is exact first, then case-insensitive; unknown names are dropped. Without tags,
    candidate names written on their own lines are taken.
    """
    candidates = list(candidates)
    by_fold = {c.casefold(): c for c in candidates}
    items = tagged_items(reply, "selected", aliases=("select",))
    if not items and _last_nonempty(reply, "selected", aliases=("select",)) is None:
        return _untagged_matches(reply or "", candidates)
    chosen: list[str] = []
    for item in items:
        name = item if item in candidates else by_fold.get(item.casefold())
        if name is not None and name not in chosen:
            chosen.append(name)
    return chosen


def parse_next_entities(reply: str) -> tuple[list[str], bool]:
    """``(entities, finish)`` from ``<next-entities>``; FINISH anywhere in the tag stops."""
    items = tagged_items(reply, "next-entities", aliases=("next_entities", "entities"))
    finish = any(_is_finish(i) for i in items)
    if not items and re.search(rf"\b{FINISH}\b", reply or ""):
        finish = True
    return [i for i in items if not _is_finish(i)], finish


def parse_answers(reply: str) -> list[str]:
    """Final answers from ``<answers>``/``<answer>``; ``[]`` when the tag is missing."""
    return tagged_items(reply, "answers", aliases=("answer",))
