"""Defensive parsing of LLM output: tagged sections, JSON / Python literals, bounded re-asks.

LLM output is untrusted input. Nothing here evaluates code: literals go through ``json`` and
``ast.literal_eval`` only, input sizes are capped, and every failure is a
:class:`~kgrag.errors.LLMOutputError`.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Iterable, TypeVar

from kgrag.errors import LLMOutputError

T = TypeVar("T")

#: Replies longer than this are cut before parsing (a runaway model must not stall a parser).
MAX_REPLY_CHARS = 200_000


def _clip(text: str | None) -> str:
    return (text or "")[:MAX_REPLY_CHARS]


def extract_tag(text: str, tag: str, *, aliases: Iterable[str] = ()) -> str | None:
    """The content of the first ``<tag>...</tag>`` (or an alias), or ``None`` when absent.

    Tolerates case differences, attributes and whitespace in the tags, and an unclosed final
    tag (content runs to the next opening tag or the end). Duplicated tags: the first wins, as
    in the paper's reference parser; use :func:`extract_all_tags` to see every occurrence.
    """
    found = extract_all_tags(text, tag, aliases=aliases)
    return found[0] if found else None


def extract_all_tags(text: str, tag: str, *, aliases: Iterable[str] = ()) -> list[str]:
    text = _clip(text)
    names = "|".join(re.escape(n) for n in (tag, *aliases))
    closed = re.compile(rf"<\s*(?:{names})(?:\s[^>]*)?>(.*?)<\s*/\s*(?:{names})\s*>",
                        re.IGNORECASE | re.DOTALL)
    results = [m.group(1).strip() for m in closed.finditer(text)]
    if results:
        return results
    unclosed = re.compile(rf"<\s*(?:{names})(?:\s[^>]*)?>(.*?)(?=<\s*[A-Za-z/][^>]*>|\Z)",
                          re.IGNORECASE | re.DOTALL)
    return [m.group(1).strip() for m in unclosed.finditer(text)]


def tag_lines(text: str, tag: str, *, aliases: Iterable[str] = (), max_items: int = 100) -> list[str]:
    """Non-empty lines inside a tag, stripped of bullets / numbering; [] when the tag is absent."""
    body = extract_tag(text, tag, aliases=aliases)
    if body is None:
        return []
    return split_items(body, max_items=max_items)


_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|\(\d+\))\s*")


def split_items(body: str, *, max_items: int = 100) -> list[str]:
    """Split a list the model wrote one-per-line into clean, de-duplicated items (order kept)."""
    seen: dict[str, None] = {}
    for line in body.splitlines():
        item = _BULLET.sub("", line).strip().strip('"').strip("'").strip()
        if item and item not in seen:
            seen[item] = None
        if len(seen) >= max_items:
            break
    return list(seen)


def _balanced_spans(text: str, opener: str, closer: str) -> Iterable[str]:
    """Every top-level balanced ``opener...closer`` span, skipping brackets inside strings."""
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and depth > 0:
            quote = ch
        elif ch == opener:
            if depth == 0:
                start = i
            depth += 1
        elif ch == closer and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start : i + 1]


def parse_literal(text: str) -> Any:
    """Parse JSON, falling back to a Python literal (``ast.literal_eval``; never ``eval``)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise LLMOutputError(f"not JSON or a Python literal: {text[:120]!r}") from exc


def extract_json_object(text: str, *, kind: type = dict) -> Any:
    """The first balanced ``{...}`` (``kind=dict``) or ``[...]`` (``kind=list``) that parses.

    Code fences and prose around it are ignored. Raises :class:`LLMOutputError` when none parses.
    """
    text = _clip(text)
    opener, closer = ("{", "}") if kind is dict else ("[", "]")
    for span in _balanced_spans(text, opener, closer):
        try:
            value = parse_literal(span)
        except LLMOutputError:
            continue
        if isinstance(value, kind):
            return value
    raise LLMOutputError(f"no {kind.__name__} literal found in the reply: {text[:160]!r}")
