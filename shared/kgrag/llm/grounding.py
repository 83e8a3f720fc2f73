"""Is an answer grounded in what was retrieved? The names an answer reply takes from its context.

A free-text answer step accepts any non-empty reply, and a weak model's reply is often prose
about something else ("The Evening Star is a celestial phenomenon ..."). An answer is
*grounded* when it names something the retrieval put in front of the model: an entity of the
retrieved items (a triple's head or tail, a path's nodes, a retrieved entity, a KET-RAG entity
or relationship line), read in the reply as a whole phrase (case, punctuation and spacing
ignored). Names the question itself mentions do not count -- "Stephen Furst is a British author"
names the question's entity, not an answer.

For text passages (KET-RAG's chunks), whose answers need not be entity names, a reply is also
grounded by a run of two or more content words, or a number of three or more digits, that the
passages contain, and a yes/no question by a reply starting with "yes" or "no".

These rules are used by :meth:`kgrag.methods.base.KGMethod.ground_answer` under
``on_unusable_reply="fallback"``; they are conservative on purpose (a reply they refuse falls
back to the retrieval's own best candidate, never to nothing worse than the LLM-free mode).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from kgrag.context.types import Answer, Chunk, RetrievalResult, Subgraph, Triple
from kgrag.errors import LLMOutputError
from kgrag.llm.parsing import content_words

#: replies are read up to this many characters (a runaway reply must not stall the check)
MAX_REPLY_CHARS = 20_000
#: at most this many names are looked for in one reply
MAX_NAMES = 5_000

_NON_WORD = re.compile(r"[\W_]+")
#: a question asking for yes or no ("Are both ...?", "Did ...?"); not a request put as one
#: ("Can you name a film ...?", "Could you tell me ...?")
_YES_NO_QUESTION = re.compile(r"^\s*(is|are|was|were|do|does|did|has|have|had)\b", re.I)
_YES_NO_REPLY = re.compile(r"^\W*(yes|no)\b", re.I)
_NUMBER = re.compile(r"\b\d{3,}\b")


def _normal(text: str) -> str:
    """Casefolded words separated by single spaces, padded with one space on each side."""
    return f" {_NON_WORD.sub(' ', text.casefold()).strip()} "


def item_names(items: Iterable[Any]) -> list[str]:
    """The entity names of retrieved items, in rank order, each once: a triple's head and tail,
    a subgraph's nodes, a KET-RAG entity / relationship line's entity, head and tail, and any
    item's ``nodes`` tuple (a path) or ``name`` (a scored entity, a custom method's item)."""
    seen: dict[str, None] = {}
    for item in items:
        if isinstance(item, Triple):
            names: Sequence[str] = (item.head, item.tail)
        elif isinstance(item, Subgraph):
            names = item.nodes
        elif isinstance(item, Chunk):
            meta = item.metadata or {}
            names = [str(meta[k]) for k in ("entity", "head", "tail") if meta.get(k)]
        elif isinstance(getattr(item, "nodes", None), tuple):
            names = item.nodes
        elif isinstance(getattr(item, "name", None), str):
            names = (item.name,)
        else:
            names = ()
        for name in names:
            seen.setdefault(name)
    return list(seen)


def names_in_reply(reply: str, names: Iterable[str], *, question: str = "") -> list[str]:
    """The ``names`` the reply mentions as whole phrases, in the order the reply first mentions
    them; where two mentions overlap the longer wins ("The Dream Team" over "Dream"). Names
    with no content word ("The", "It"), and names the question mentions (every content word
    of the name is in the question), are never returned.

    >>> names_in_reply("Stephen Furst acted in The Dream Team (1989).",
    ...                ["Stephen Furst", "The Dream Team", "Dream", "1989"],
    ...                question="what does Stephen Furst act in")
    ['The Dream Team', '1989']
    """
    text = _normal(reply[:MAX_REPLY_CHARS])
    asked = set(content_words(question))
    found: list[tuple[int, int, str]] = []
    for k, name in enumerate(dict.fromkeys(names)):
        if k >= MAX_NAMES:
            break
        words = set(content_words(name))
        if not words or words <= asked:
            continue
        phrase = _normal(name)
        at = text.find(phrase)
        if at >= 0:
            found.append((at, -len(phrase), name))
    found.sort()
    kept, end = [], -1
    for at, minus_len, name in found:
        if at + 1 >= end:  # phrases share their padding space; a later start is disjoint
            kept.append(name)
            end = at - minus_len
    return kept


def grounded_in_passages(reply: str, passages: str, *, question: str = "") -> bool:
    """Whether the reply takes a run of two or more consecutive content words, or a number
    of three or more digits, from ``passages`` (words the question has do not count).

    >>> grounded_in_passages("It was founded in 1844 by Arthur's Home Magazine.",
    ...                      "Arthur's Home Magazine (1844-1846) was an American ...")
    True
    >>> grounded_in_passages("The 10 as they as as them.", "They had 10 children ...")
    False
    """
    text = _normal(passages)
    asked = set(content_words(question))
    for number in _NUMBER.findall(reply[:MAX_REPLY_CHARS]):
        if number not in asked and f" {number} " in text:
            return True
    words = _normal(reply[:MAX_REPLY_CHARS]).split()
    stop = set(words) - set(content_words(" ".join(words)))
    for a, b in zip(words, words[1:]):
        if a in stop or b in stop or {a, b} <= asked:
            continue
        if f" {a} {b} " in text:
            return True
    return False


def is_yes_no(question: str, reply: str) -> str | None:
    """``"yes"`` / ``"no"`` when a yes/no question's reply starts with it, else ``None``."""
    if not _YES_NO_QUESTION.match(question):
        return None
    match = _YES_NO_REPLY.match(reply)
    return match.group(1).lower() if match else None


def ground_answer(question: str, result: RetrievalResult, answer: Answer, *,
                  candidates: Sequence[str] | None = None) -> Answer:
    """``answer`` checked against the retrieval it was written from.

    The names an answer may be are ``candidates`` -- the retrieval's own ranked answer
    candidates, when the method has them (ByoKG-RAG's walk targets, GraphRAFT's query
    results): they carry the answer's type, so "The World's Greatest Lover is a classic film"
    does not answer "who acted in Trippin'?" even though the film is in the context -- else
    every entity of the retrieved items (:func:`item_names`).

    * Parsed answers that are short (at most 12 words) and each grounded (naming a retrieved
      entity, taken from the retrieved passages, or yes / no to a yes/no question) are kept.
    * Otherwise the answers become the retrieved entities the reply names, in the order it
      names them: a prose reply "The Dream Team is a comedy-drama ..." answers "The Dream
      Team".
    * A reply that names nothing retrieved (and is not grounded in the passages) raises
      :class:`~kgrag.errors.LLMOutputError`.

    The reply read is ``result.metadata["answer_reply"]`` (the methods' answer steps record
    it), else the answer's text.
    """
    reply = str(result.metadata.get("answer_reply") or answer.text or "")
    names = list(candidates) if candidates else item_names(result.items)
    passages = "\n".join(item.text for item in result.items if isinstance(item, Chunk)
                         and not set(item.metadata or ()) & {"entity", "head"})

    def grounded(text: str) -> bool:
        return bool(names_in_reply(text, names, question=question)
                    or (passages and grounded_in_passages(text, passages, question=question))
                    or is_yes_no(question, text))

    if answer.answers and all(len(a.split()) <= 12 and grounded(a) for a in answer.answers):
        return answer
    found = names_in_reply(reply, names, question=question)
    yes_no = is_yes_no(question, reply)
    if not found and yes_no:
        found = [yes_no]
    if found:
        return Answer(question, found, reply.strip(), result, answer.usage)
    if answer.answers and passages and grounded_in_passages(reply, passages, question=question):
        return answer
    raise LLMOutputError("the answer names none of the retrieval's answer candidates: "
                         f"{reply.strip()[:120]!r}")


__all__ = ["ground_answer", "grounded_in_passages", "is_yes_no", "item_names", "names_in_reply"]
