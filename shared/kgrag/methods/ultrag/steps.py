"""UltRAG's LLM loop written once: LLM calls are yielded requests, answered sync or async.

Query generation (with its bounded re-asks) and Algorithm 1's rounds are generators that
``yield`` an :class:`LLMRequest` whenever they need the LLM and receive the reply text back.
:func:`run_sync` answers each request with ``llm.complete``, :func:`run_async` with
``await llm.acomplete``; so :meth:`UltRAG.retrieve` and :meth:`UltRAG.aretrieve` run the very
same code and differ only in their driver (the pattern of ByoKG-RAG's steps). Both drivers share
one loop, :func:`_drive`: the sync one runs it with a ``complete`` that never suspends.

An exception raised by the LLM call is thrown back into the generator at its ``yield``, so the
algorithm sees it exactly where a direct ``llm.complete(...)`` call would have raised it (an
``LLMOutputError`` from the model becomes an empty result, like a reply that does not parse).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from kgrag.errors import LLMOutputError
from kgrag.llm.parsing import _reask_prompt

T = TypeVar("T")


@dataclass(frozen=True)
class LLMRequest:
    """One LLM completion the algorithm needs: the prompt and the system message."""

    prompt: str
    system: str | None = None


#: a generator of LLM requests that receives each reply and returns a ``T`` at the end
Steps = Generator[LLMRequest, str, T]


def ask_and_parse(prompt: str, parse: Callable[[str], T], *, retries: int = 1,
                  system: str | None = None) -> Steps[tuple[T, str]]:
    """:func:`kgrag.llm.complete_and_parse` as steps: ask, parse, re-ask on ``LLMOutputError``.

    At most ``retries`` re-asks, each with the original prompt plus the parse error (the same
    re-ask prompt as :func:`~kgrag.llm.complete_and_parse`). Returns ``(parsed, raw_reply)``;
    raises the last ``LLMOutputError`` when every try fails.
    """
    attempt = prompt
    for re_asks_left in range(retries, -1, -1):
        reply = yield LLMRequest(attempt, system)
        try:
            return parse(reply), reply
        except LLMOutputError as exc:
            if not re_asks_left:
                raise
            attempt = _reask_prompt(prompt, exc)
    raise AssertionError("unreachable: the last try returns or raises")


async def _drive(steps: Steps[T], complete: Callable[[LLMRequest], Awaitable[str]]) -> T:
    """The one driver loop: answer each request with ``await complete(request)``.

    A reply is sent into ``steps``; an exception of the call is thrown into it instead.
    """
    reply: str | None = None
    error: Exception | None = None
    while True:
        try:
            request = steps.throw(error) if error is not None else steps.send(reply)
        except StopIteration as done:
            return done.value
        try:
            reply, error = await complete(request), None
        except Exception as exc:  # noqa: BLE001 -- re-raised inside the algorithm, at its yield
            reply, error = None, exc


async def run_async(steps: Steps[T], llm: Any) -> T:
    """Drive ``steps`` to the end, answering every request with ``await llm.acomplete``."""

    async def complete(request: LLMRequest) -> str:
        return await llm.acomplete(request.prompt, system=request.system)

    return await _drive(steps, complete)


def run_sync(steps: Steps[T], llm: Any) -> T:
    """Drive ``steps`` to the end, answering every request with ``llm.complete``.

    The same loop as :func:`run_async`: its ``complete`` never suspends, so the coroutine runs
    to the end on its first ``send`` (no event loop involved, callable from inside one).
    """

    async def complete(request: LLMRequest) -> str:
        return llm.complete(request.prompt, system=request.system)

    driver = _drive(steps, complete)
    try:
        driver.send(None)
    except StopIteration as done:
        return done.value
    driver.close()
    raise RuntimeError("the synchronous UltRAG driver was suspended; use run_async")
