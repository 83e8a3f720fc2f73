"""One algorithm, two drivers: LLM calls as yielded requests, answered sync or async.

A method's LLM loop (ByoKG-RAG's Algorithms 1 and 2, UltRAG's query rounds, a bounded re-ask)
is written once, as a generator that ``yield``s an :class:`LLMRequest` whenever it needs the
LLM and receives the reply text back. :func:`run_sync` answers each request with
``llm.complete``, :func:`run_async` with ``await llm.acomplete`` -- so the async path is really
asynchronous without a second copy of the algorithm. Both share one loop, :func:`_drive`; the
sync driver runs it with a ``complete`` that never suspends (no event loop involved, so it can
be called from inside one).

An exception raised by the LLM call is thrown back into the generator at its ``yield``, so the
algorithm sees it exactly where a direct ``llm.complete(...)`` would have raised it. Every
request is recorded, by step name, in a :class:`CallLog`.

A step that is not one LLM completion -- a component that calls the LLM its own way (a query
selector, an arbitrator) or blocking work the async path keeps off the event loop -- is yielded
as an :class:`Offload`: the sync driver calls its ``run()``, the async driver awaits its
``arun()`` (or calls ``run()`` when it has none); the value comes back at the ``yield``.

:func:`complete_and_parse` / :func:`acomplete_and_parse` are the smallest such algorithm,
:func:`ask_and_parse` (ask, parse, re-ask with the error), driven to the end.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kgrag.errors import LLMCallError, LLMOutputError
from kgrag.llm.base import exhausted_error, llm_step

T = TypeVar("T")


@dataclass(frozen=True)
class LLMRequest:
    """One LLM completion an algorithm needs; ``step`` names the step (for accounting)."""

    prompt: str
    system: str | None = None
    step: str = ""


@dataclass
class CallLog:
    """The LLM requests of one run: their step names, in order."""

    steps: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.steps)

    def count(self, step: str) -> int:
        return sum(1 for s in self.steps if s == step)

    def by_step(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.steps:
            out[s] = out.get(s, 0) + 1
        return out


@dataclass(frozen=True)
class Offload:
    """Work an algorithm hands to its driver that is not one LLM completion: ``run()`` under
    :func:`run_sync`, ``await arun()`` under :func:`run_async` (``run()`` there too when
    ``arun`` is ``None``). Its return value is sent back; its exception is thrown in."""

    run: Callable[[], Any]
    arun: Callable[[], Awaitable[Any]] | None = None


def in_thread(run: Callable[[], T]) -> Offload:
    """An :class:`Offload` of blocking work: called directly by the sync driver, in a worker
    thread (``asyncio.to_thread``, context copied) by the async one."""
    import asyncio

    return Offload(run, lambda: asyncio.to_thread(run))


#: a generator of LLM requests (and offloaded work) that receives each reply and returns a
#: ``T`` at the end
Steps = Generator[Any, Any, T]


def reask_prompt(prompt: str, error: LLMOutputError) -> str:
    """The original prompt plus why the last reply was unusable (one bounded re-ask)."""
    return (f"{prompt}\n\nYour previous reply could not be used ({error}). "
            "Reply again, following the required format exactly.")


@dataclass(frozen=True)
class ReplyRecord:
    """One LLM reply and what its step's parser made of it: ``usable`` is ``None`` for a step
    that parses without :func:`ask_and_parse` (its reply is kept, not judged)."""

    step: str
    reply: str
    usable: bool | None = None
    error: str = ""


#: the reply logs open in this context (see :func:`record_replies`)
_REPLY_LOGS: contextvars.ContextVar[tuple[list[ReplyRecord], ...]] = contextvars.ContextVar(
    "kgrag_reply_logs", default=())


@contextmanager
def record_replies() -> Iterator[list[ReplyRecord]]:
    """Collect every LLM reply made in this context inside the block, in order, with its step
    and whether the step could use it (the evaluation's unusable-reply rate per step, and the
    raw replies kept as parser fixtures). Follows ``asyncio`` tasks and ``to_thread``."""
    log: list[ReplyRecord] = []
    token = _REPLY_LOGS.set(_REPLY_LOGS.get() + (log,))
    try:
        yield log
    finally:
        _REPLY_LOGS.reset(token)


def _note_reply(record: ReplyRecord) -> None:
    for log in _REPLY_LOGS.get():
        log.append(record)


def _judge_last(step: str, usable: bool, error: str = "") -> None:
    """Mark the last unjudged reply of ``step`` in every open log (the driver recorded it)."""
    for log in _REPLY_LOGS.get():
        for i in range(len(log) - 1, -1, -1):
            if log[i].step == step and log[i].usable is None:
                log[i] = ReplyRecord(step, log[i].reply, usable, error)
                break


def ask_and_parse(prompt: str, parse: Callable[[str], T], *, retries: int = 1,
                  system: str | None = None, step: str = "") -> Steps[tuple[T, str]]:
    """Ask, parse, and on :class:`LLMOutputError` re-ask up to ``retries`` times with the error.

    Returns ``(parsed, raw_reply)``; raises the last ``LLMOutputError`` when every try fails.
    """
    attempt = prompt
    for re_asks_left in range(retries, -1, -1):
        reply = yield LLMRequest(attempt, system, step)
        try:
            parsed = parse(reply)
        except LLMOutputError as exc:
            _judge_last(step, False, str(exc))
            if not re_asks_left:
                raise
            attempt = reask_prompt(prompt, exc)
        else:
            _judge_last(step, True)
            return parsed, reply
    raise AssertionError("unreachable: the last try returns or raises")


def require_text(reply: str) -> str:
    """The reply itself, or :class:`LLMOutputError` when it is blank: the parse of a free-text
    step (a final answer), whose only unusable reply is an empty one."""
    if not (reply or "").strip():
        raise LLMOutputError("the reply is empty")
    return reply


def answer_steps(prompt: str, *, system: str | None = None, retries: int = 1) -> Steps[str]:
    """A final answer call (step ``"answer"``): one call, re-asked up to ``retries`` times when
    the reply is blank; returns the reply, or raises :class:`LLMOutputError` (see
    :func:`ask_and_parse`)."""
    reply, _ = yield from ask_and_parse(prompt, require_text, retries=retries, system=system,
                                        step="answer")
    return reply


def _exhausted(exc: StopIteration) -> LLMCallError:
    # the adapters already raise this (kgrag.llm.base); kept for LLM objects that are not one
    return exhausted_error()


def _as_text(reply: Any) -> str:
    return reply if isinstance(reply, str) else str(reply or "")


async def _drive(steps: Steps[T], complete: Callable[[LLMRequest], Awaitable[Any]],
                 log: CallLog | None, *, asynchronous: bool) -> T:
    """The one driver loop: answer each request with ``await complete(request)`` and do each
    :class:`Offload` (``arun`` only when ``asynchronous``).

    A reply is sent into ``steps``; an exception of the call is thrown into it instead.
    """
    reply: Any = None
    error: Exception | None = None
    while True:
        try:
            # the first send is None (starting the generator), later ones the reply text
            request = steps.throw(error) if error is not None else steps.send(reply)
        except StopIteration as done:
            return done.value
        if isinstance(request, Offload):
            try:
                if asynchronous and request.arun is not None:
                    reply, error = await request.arun(), None
                else:
                    reply, error = request.run(), None
            except Exception as exc:  # noqa: BLE001 -- re-raised inside the algorithm
                reply, error = None, exc
            continue
        if log is not None:
            log.steps.append(request.step)
        try:
            with llm_step(request.step):
                reply, error = _as_text(await complete(request)), None
            _note_reply(ReplyRecord(request.step, reply))
        except Exception as exc:  # noqa: BLE001 -- re-raised inside the algorithm, at its yield
            reply, error = None, exc


async def run_async(steps: Steps[T], llm: Any, log: CallLog | None = None) -> T:
    """Drive ``steps`` to the end, answering every request with ``await llm.acomplete``."""

    async def complete(request: LLMRequest) -> Any:
        try:
            return await llm.acomplete(request.prompt, system=request.system)
        except StopIteration as exc:
            raise _exhausted(exc) from None
        except RuntimeError as exc:  # asyncio turns a StopIteration into a bare RuntimeError
            if isinstance(exc.__cause__, StopIteration):
                raise _exhausted(exc.__cause__) from None
            raise

    return await _drive(steps, complete, log, asynchronous=True)


def run_sync(steps: Steps[T], llm: Any, log: CallLog | None = None) -> T:
    """Drive ``steps`` to the end, answering every request with ``llm.complete``.

    The same loop as :func:`run_async`: its ``complete`` never suspends, so the coroutine runs
    to the end on its first ``send``.
    """

    async def complete(request: LLMRequest) -> Any:
        try:
            return llm.complete(request.prompt, system=request.system)
        except StopIteration as exc:
            raise _exhausted(exc) from None

    driver = _drive(steps, complete, log, asynchronous=False)
    try:
        driver.send(None)
    except StopIteration as done:
        return done.value
    driver.close()
    raise RuntimeError("the synchronous driver was suspended; use run_async")


def complete_and_parse(llm: Any, prompt: str, parse: Callable[[str], T], *, retries: int = 1,
                       system: str | None = None,
                       step: str = "") -> tuple[T, str]:
    """:func:`ask_and_parse` answered by ``llm.complete``: ``(parsed, raw_reply)``."""
    return run_sync(ask_and_parse(prompt, parse, retries=retries, system=system, step=step),
                    llm)


def complete_answer(llm: Any, prompt: str, *, system: str | None = None,
                    retries: int = 1) -> str:
    """:func:`answer_steps` answered by ``llm.complete``: the non-blank answer reply."""
    return run_sync(answer_steps(prompt, system=system, retries=retries), llm)


async def acomplete_answer(llm: Any, prompt: str, *, system: str | None = None,
                           retries: int = 1) -> str:
    """:func:`answer_steps` answered by ``await llm.acomplete``."""
    return await run_async(answer_steps(prompt, system=system, retries=retries), llm)


async def acomplete_and_parse(llm: Any, prompt: str, parse: Callable[[str], T], *,
                              retries: int = 1, system: str | None = None,
                       step: str = "") -> tuple[T, str]:
    """:func:`ask_and_parse` answered by ``await llm.acomplete``: ``(parsed, raw_reply)``."""
    return await run_async(ask_and_parse(prompt, parse, retries=retries, system=system,
                                         step=step), llm)
