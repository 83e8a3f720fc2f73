"""``did you mean ...?`` for names a user or an LLM misspelt.

Errors about an unknown entity or relation end with the closest known names, found with
rapidfuzz (``WRatio`` on lower-cased text), so a typo in a CLI argument, a DSL query or a
relation path is one glance from its fix::

    >>> did_you_mean("directed_bye", ["directed_by", "written_by", "starred_actors"])
    "; did you mean 'directed_by'?"
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: Suggestions below this rapidfuzz WRatio (0-100) are not worth showing.
MIN_SCORE = 70.0


def close_matches(name: str, choices: Iterable[str], limit: int = 3,
                  min_score: float = MIN_SCORE) -> list[str]:
    """Up to ``limit`` of ``choices`` closest to ``name`` (best first, each at most once)."""
    from rapidfuzz import fuzz, process, utils

    pool: Sequence[str] = choices if isinstance(choices, Sequence) else list(choices)
    if not name or not len(pool):
        return []
    found = process.extract(str(name), pool, scorer=fuzz.WRatio, processor=utils.default_process,
                            limit=limit * 3, score_cutoff=min_score)
    out: list[str] = []
    for choice, _, _ in found:
        if choice not in out and choice != name:
            out.append(choice)
        if len(out) == limit:
            break
    return out


def did_you_mean(name: str, choices: Iterable[str], limit: int = 3) -> str:
    """``"; did you mean 'a', 'b'?"`` (to append to an error message), or ``""`` if none close."""
    matches = close_matches(name, choices, limit)
    if not matches:
        return ""
    return "; did you mean " + ", ".join(repr(m) for m in matches) + "?"
