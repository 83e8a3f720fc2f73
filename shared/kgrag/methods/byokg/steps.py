"""One algorithm, two drivers: LLM calls as yielded requests, run sync or async.

The ByoKG-RAG loops (Algorithms 1 and 2) are written once, as generators that ``yield`` an
:class:`Ask` whenever they need the LLM and receive the reply text back. :func:`run_sync` answers
with ``llm.complete``; :func:`run_async` with ``await llm.acomplete`` -- so the async path is
really asynchronous without a second copy of the algorithm. Every call is counted in the
returned :class:`CallLog` (per question, whatever else shares the LLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generator, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Ask:
    """A request for one LLM completion; ``step`` names the algorithm step (for accounting)."""

    prompt: str
    system: str | None = None
    step: str = ""


@dataclass
class CallLog:
    """The LLM calls of one run: how many per step, in order."""

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


Steps = Generator[Ask, str, T]


def run_sync(gen: Steps[T], llm: Any, log: CallLog | None = None) -> T:
    """Drive ``gen`` to completion, answering each :class:`Ask` with ``llm.complete``."""
    log = log if log is not None else CallLog()
    try:
        ask = next(gen)
        while True:
            log.steps.append(ask.step)
            reply = llm.complete(ask.prompt, system=ask.system)
            ask = gen.send(reply if isinstance(reply, str) else str(reply or ""))
    except StopIteration as stop:
        return stop.value


async def run_async(gen: Steps[T], llm: Any, log: CallLog | None = None) -> T:
    """Drive ``gen`` to completion with ``await llm.acomplete``."""
    log = log if log is not None else CallLog()
    try:
        ask = next(gen)
        while True:
            log.steps.append(ask.step)
            reply = await llm.acomplete(ask.prompt, system=ask.system)
            ask = gen.send(reply if isinstance(reply, str) else str(reply or ""))
    except StopIteration as stop:
        return stop.value
