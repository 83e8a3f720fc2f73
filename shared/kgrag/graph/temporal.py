"""Temporal facts as plain triples: ``(h, r, t, time)`` -> ``(h, "r (time)", t)``.

ByoKG-RAG (paper §4.1, CronQuestions) folds the timestamp of a temporal KG into the relation, so
every method that works on triples also works on a temporal KG, and the time reaches the LLM
inside the verbalised fact (the paper's case study prints ``position held (1979 - 1983)``).

>>> temporal_to_triples([("Francis Pym", "position held", "MP", (1979, 1983))])
[('Francis Pym', 'position held (1979 - 1983)', 'MP')]
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Sequence

from kgrag.errors import GraphFormatError


def format_time(time: Any) -> str:
    """``(1979, 1983)`` -> ``"1979 - 1983"``; ``(1979, 1979)`` or ``1979`` -> ``"1979"``."""
    if isinstance(time, (tuple, list)):
        parts = [str(p).strip() for p in time if p is not None and str(p).strip()]
        if not parts:
            return ""
        if len(parts) == 2 and parts[0] == parts[1]:
            return parts[0]
        return " - ".join(parts)
    return "" if time is None else str(time).strip()


def temporal_relation(relation: str, time: Any) -> str:
    """The relation name with its time in parentheses (unchanged when there is no time)."""
    stamp = format_time(time)
    return f"{relation} ({stamp})" if stamp else relation


def iter_temporal_triples(quads: Iterable[Sequence[Any]]) -> Iterator[tuple[str, str, str]]:
    for position, quad in enumerate(quads, start=1):
        if len(quad) == 4:
            h, r, t, time = quad
        elif len(quad) == 5:  # (h, r, t, start, end)
            h, r, t, start, end = quad
            time = (start, end)
        else:
            raise GraphFormatError(f"expected (head, relation, tail, time) or "
                                   f"(head, relation, tail, start, end), got {quad!r:.200}",
                                   line=position)
        yield (str(h), temporal_relation(str(r), time), str(t))


def temporal_to_triples(quads: Iterable[Sequence[Any]]) -> list[tuple[str, str, str]]:
    """Quadruples ``(h, r, t, time)`` or quintuples ``(h, r, t, start, end)`` as triples."""
    return list(iter_temporal_triples(quads))
