"""Defensive parsing of LLM output: tagged sections, JSON / Python literals, bounded re-asks.

LLM output is untrusted input. Nothing here evaluates code: literals go through ``json`` and
``ast.literal_eval`` only, input sizes are capped, and every failure is a
:class:`~kgrag.errors.LLMOutputError`.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, TypeVar

from kgrag.errors import LLMOutputError
from kgrag.text.clean import replace_lone_surrogates

T = TypeVar("T")

#: Replies longer than this are cut before parsing (a runaway model must not stall a parser).
MAX_REPLY_CHARS = 200_000


def _clip(text: str | None) -> str:
    """The reply cut to :data:`MAX_REPLY_CHARS`, lone surrogates replaced by U+FFFD."""
    return replace_lone_surrogates((text or "")[:MAX_REPLY_CHARS])


def extract_tag(text: str, tag: str, *, aliases: Iterable[str] = ()) -> str | None:
    """The content of the first ``<tag>...</tag>`` (or an alias), or ``None`` when absent.

    Tolerates case differences, attributes and whitespace in the tags, and an unclosed final
    tag (content runs to the next opening tag or the end). Duplicated tags: the first wins, as
    in the paper's reference parser; use :func:`extract_all_tags` to see every occurrence.
    """
    found = extract_all_tags(text, tag, aliases=aliases)
    return found[0] if found else None


def extract_all_tags(text: str, tag: str, *, aliases: Iterable[str] = ()) -> list[str]:
    """The content of every ``<tag>...</tag>`` (or alias) in order; see :func:`extract_tag`.

    When no tag is closed, each opening tag's content runs to the next tag of any name (or to
    the end). One pass over the tags found by :func:`scan_tags`, so the time is linear in the
    reply's length whatever the model wrote (a run of unclosed tags included).
    """
    text = _clip(text)
    wanted = {n.casefold() for n in (tag, *aliases)}
    tags = scan_tags(text)
    results: list[str] = []
    open_end = -1
    for t in tags:
        if t.name not in wanted:
            continue
        if not t.closing:
            if open_end < 0:
                open_end = t.end
        elif open_end >= 0:
            results.append(text[open_end:t.start].strip())
            open_end = -1
    if results:
        return results
    unclosed: list[str] = []
    for k, t in enumerate(tags):
        if t.name in wanted and not t.closing:
            stop = tags[k + 1].start if k + 1 < len(tags) else len(text)
            unclosed.append(text[t.end:stop].strip())
    return unclosed


@dataclass(frozen=True)
class Tag:
    """One tag found by :func:`scan_tags`: ``text[start:end]`` is ``<name ...>`` or ``</name>``."""

    name: str  # case-folded
    closing: bool
    start: int
    end: int


_TAG_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:.")


def scan_tags(text: str) -> list[Tag]:
    """Every tag in ``text``, left to right, in one linear pass (no backtracking regex).

    A tag is ``<``, optional spaces, an optional ``/``, optional spaces, a name (letters, digits,
    ``_ - : .``, starting with a letter), then either ``>`` directly (after optional spaces) or
    spaces and attributes up to the next ``>``. Attributes cannot contain ``<``: a ``<`` starts
    the next candidate, so ``"<a <a <a"`` costs one look at each character. The positions of the
    next ``>`` and ``<`` are kept as cursors that only move forward.
    """
    tags: list[Tag] = []
    n = len(text)
    next_gt = -1  # position of the next ">" at or after the cursor (n when none)
    next_lt = -1
    i = text.find("<")
    while 0 <= i < n:
        j = i + 1
        while j < n and text[j].isspace():
            j += 1
        closing = j < n and text[j] == "/"
        if closing:
            j += 1
            while j < n and text[j].isspace():
                j += 1
        k = j
        if k < n and text[k].isalpha() and text[k].isascii():
            while k < n and text[k] in _TAG_NAME_CHARS:
                k += 1
        if k > j and k < n:
            end = -1
            if text[k] == ">":
                end = k + 1
            elif text[k].isspace():
                if next_gt < k:
                    found = text.find(">", k)
                    next_gt = n if found < 0 else found
                if next_lt < k:
                    found = text.find("<", k)
                    next_lt = n if found < 0 else found
                if next_gt < next_lt:
                    end = next_gt + 1
            if end > 0:
                tags.append(Tag(text[j:k].casefold(), closing, i, end))
                i = text.find("<", end)
                continue
        i = text.find("<", i + 1)
    return tags


def tag_lines(text: str, tag: str, *, aliases: Iterable[str] = (),
              max_items: int = 100) -> list[str]:
    """Non-empty lines inside a tag, stripped of bullets / numbering; [] when the tag is absent."""
    body = extract_tag(text, tag, aliases=aliases)
    if body is None:
        return []
    return split_items(body, max_items=max_items)


_BULLET = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|\(\d+\))\s*")


_WORD = re.compile(r"\w+")


def content_words(text: str) -> list[str]:
    """The casefolded words of ``text`` that are not English stopwords."""
    from kgrag.text.stopwords import ENGLISH_STOPWORDS

    return [w for w in _WORD.findall(text.casefold()) if w not in ENGLISH_STOPWORDS]


#: consecutive words a reply must share with a prompt's instructions to count as echoing them
ECHO_WORDS = 6


def echoed_instructions(reply: str, instructions: str, *, min_words: int = ECHO_WORDS
                        ) -> str | None:
    """The first run of ``min_words`` consecutive words (case and punctuation ignored) that
    ``reply`` copies from ``instructions``, or ``None``.

    A small model often answers by repeating its prompt's task text ("List every topic entity
    of the question that must be found in the graph ... <entities></entities>"); the tags that
    text contains then parse as an answer. Instructions are prose a reply never needs to
    repeat, so six words of them in a row mark a reply as an echo, not an answer. Pass only
    the instruction text: a reply may rightly copy the question, the schema or the graph
    context.

    >>> echoed_instructions("Task 1: list every topic entity of the question that must be "
    ...                     "found <entities></entities>",
    ...                     "List every topic entity of the question that must be found.")
    'list every topic entity of the'
    >>> echoed_instructions("<entities>Paprika</entities>", "List every topic entity ...") is None
    True
    """
    source = _WORD.findall(_clip(instructions).casefold())
    words = _WORD.findall(_clip(reply).casefold())
    if len(source) < min_words or len(words) < min_words:
        return None
    runs = {tuple(source[i:i + min_words]) for i in range(len(source) - min_words + 1)}
    for i in range(len(words) - min_words + 1):
        run = tuple(words[i:i + min_words])
        if run in runs:
            return " ".join(run)
    return None


def mentioned_in(question: str, names: Iterable[str]) -> list[str]:
    """The ``names`` a reader would say the question mentions: every content word of the name
    occurs in the question (case and punctuation ignored, so ``"paprika"`` and ``"Paprika."``
    count, ``"Paprika (film)"`` does not when "film" is not asked about).

    An entity-extraction step (the question's entities, not the model's associations) keeps
    only these: a small model that answers "Guillermo del Toro" or "blah blah" instead of
    copying "Paprika" out of the question must not steer retrieval with it. A name made only
    of stopwords ("the", "it") is never a mention, nor is the whole question copied back ("The
    film The Chapman Report starred which actors?") when it has more than one content word."""
    asked = set(content_words(question))
    kept = []
    for name in names:
        words = set(content_words(name))
        echo = len(asked) > 1 and words == asked  # the question copied back is not a mention
        if words and words <= asked and not echo:
            kept.append(name)
    return kept


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


#: Deepest bracket nesting :func:`parse_literal` accepts. JSON and ``ast`` parse recursively
#: (``json.loads`` raises ``RecursionError`` near 1,000 levels; code walking the result recurses
#: too), and no reply a method asks for nests more than a few levels.
MAX_NESTING = 100


def nesting_depth(text: str, limit: int | None = None) -> int:
    """Deepest ``[ { (`` nesting outside quoted strings, one pass (stops early past ``limit``)."""
    depth = deepest = 0
    quote, escaped = "", False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
            if depth > deepest:
                deepest = depth
                if limit is not None and deepest > limit:
                    return deepest
        elif ch in "]})" and depth > 0:
            depth -= 1
    return deepest


def parse_literal(text: str) -> Any:
    """Parse JSON, falling back to a Python literal (``ast.literal_eval``; never ``eval``).

    Every failure is an :class:`LLMOutputError`: text nested deeper than :data:`MAX_NESTING`
    is refused before parsing, and the parsers' own limits (recursion, Python's 4,300-digit
    integer limit, memory) are caught.
    """
    if not isinstance(text, str):
        raise LLMOutputError(f"expected text to parse, got {type(text).__name__}")
    text = _clip(text)
    if nesting_depth(text, MAX_NESTING) > MAX_NESTING:
        raise LLMOutputError(f"literal nested deeper than {MAX_NESTING} levels: {text[:80]!r}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError, MemoryError):  # JSONDecodeError is a ValueError
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
