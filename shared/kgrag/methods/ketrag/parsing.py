"""Strict parser of the extraction record format (see ``prompts.py``).

LLM output is untrusted: every line must be one JSON array (``json.loads`` only) of the right
shape, or it is rejected and counted. Names and descriptions are whitespace-collapsed and capped;
a relation's strength must be a number and is clipped to 1..10. A reply whose records all fail,
or that has no records and no ``["done"]``, raises :class:`~kgrag.errors.LLMOutputError`, so the
caller can re-ask once.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from kgrag.errors import LLMOutputError
from kgrag.llm.parsing import MAX_REPLY_CHARS

MAX_NAME_CHARS = 200
MAX_LABEL_CHARS = 80
MAX_DESCRIPTION_CHARS = 2000
MAX_RECORDS = 1000


@dataclass(frozen=True)
class EntityRecord:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class RelationRecord:
    source: str
    label: str
    target: str
    strength: float
    description: str


@dataclass
class ParsedRecords:
    """Records of one reply; ``rejected`` counts lines that were not valid records."""

    entities: list[EntityRecord] = field(default_factory=list)
    relations: list[RelationRecord] = field(default_factory=list)
    rejected: int = 0
    done: bool = False

    @property
    def count(self) -> int:
        return len(self.entities) + len(self.relations)

    def extend(self, other: ParsedRecords) -> None:
        self.entities.extend(other.entities)
        self.relations.extend(other.relations)
        self.rejected += other.rejected
        self.done = self.done or other.done

    def as_dict(self) -> dict:
        return {
            "entities": [[e.name, e.type, e.description] for e in self.entities],
            "relations": [[r.source, r.label, r.target, r.strength, r.description]
                          for r in self.relations],
            "rejected": self.rejected,
            "done": self.done,
        }


def _clean(value: object, cap: int) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text[:cap] if text else None


def parse_record_line(line: str) -> EntityRecord | RelationRecord | str | None:
    """One line -> a record, ``"done"``, or ``None`` when it is not a valid record."""
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        return None
    kind = value[0].strip().lower()
    if kind == "done" and len(value) == 1:
        return "done"
    if kind == "entity" and len(value) == 4:
        name = _clean(value[1], MAX_NAME_CHARS)
        etype = _clean(value[2], MAX_LABEL_CHARS)
        if not name or not etype or not isinstance(value[3], str):
            return None
        return EntityRecord(name, etype.lower(), " ".join(value[3].split())[:MAX_DESCRIPTION_CHARS])
    if kind == "relation" and len(value) == 6:
        source = _clean(value[1], MAX_NAME_CHARS)
        label = _clean(value[2], MAX_LABEL_CHARS)
        target = _clean(value[3], MAX_NAME_CHARS)
        strength = value[4]
        if isinstance(strength, str):
            try:
                strength = float(strength)
            except ValueError:
                return None
        if isinstance(strength, bool) or not isinstance(strength, (int, float)):
            return None
        if isinstance(strength, int):  # a 4,000-digit int overflows float(): clamp it first
            strength = min(10, max(1, strength))
        if not math.isfinite(strength):  # NaN / infinity
            return None
        desc = value[5] if isinstance(value[5], str) else None
        if not (source and label and target) or desc is None:
            return None
        return RelationRecord(source, label.lower(), target, float(min(10.0, max(1.0, strength))),
                              " ".join(desc.split())[:MAX_DESCRIPTION_CHARS])
    return None


def parse_records(reply: str) -> ParsedRecords:
    """Parse a whole extraction reply (code fences and blank lines are ignored).

    >>> r = parse_records('["entity", "Paris", "geo", "Capital of France."]\\n["done"]')
    >>> (r.entities[0].name, r.done, r.rejected)
    ('Paris', True, 0)
    """
    out = ParsedRecords()
    for raw in (reply or "")[:MAX_REPLY_CHARS].splitlines():
        line = raw.strip()
        if not line or line.startswith("```"):
            continue
        if out.count >= MAX_RECORDS:
            out.rejected += 1
            continue
        rec = parse_record_line(line)
        if rec == "done":
            out.done = True
        elif isinstance(rec, EntityRecord):
            out.entities.append(rec)
        elif isinstance(rec, RelationRecord):
            out.relations.append(rec)
        else:
            out.rejected += 1
    if out.count == 0 and not out.done:
        raise LLMOutputError(
            f"no valid record in the reply ({out.rejected} line(s) rejected); expected JSON arrays "
            'such as ["entity", "Paris", "geo", "..."] and a final ["done"]')
    return out
