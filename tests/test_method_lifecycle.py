"""One lifecycle: a method writes its steps once and KGMethod drives them.

The five methods define ``retrieval_steps`` (and ``answering_steps``) and none of the six entry
points; KGMethod's ``retrieve`` / ``aretrieve`` / ``answer`` / ``aanswer`` / ``answer_from`` /
``aanswer_from`` run the same steps synchronously or asynchronously and apply, once, the "no
LLM" error, ``on_unusable_reply`` and the usage accounting. A toy method shows each of those
without any code of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kgrag.context.types import Answer, RetrievalResult, ScoredEntity
from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.llm import as_llm
from kgrag.llm.steps import LLMRequest, Offload, in_thread, run_async, run_sync
from kgrag.methods.base import QUESTION_ENTRY_POINTS, KGMethod
from kgrag.methods.registry import get_method, method_names


def test_the_five_methods_write_steps_not_entry_points():
    for name in method_names():
        cls = get_method(name).method_class()
        own = [entry for entry in QUESTION_ENTRY_POINTS if entry in vars(cls)]
        assert not own, f"{name} writes {own} itself: define its steps, KGMethod drives them"
        assert "retrieval_steps" in vars(cls) and "answering_steps" in vars(cls), name


class Echo(KGMethod):
    """Toy method: one LLM call names the answer entity; the answer step asks once more."""

    name = "echo"
    llm_needed = {"retrieve": ("Echo's naming step", "Without an LLM, nothing."),
                  "answer": ("Echo's answer step", "")}

    def __init__(self, *, llm: Any = None, **params: Any) -> None:
        self.llm = None if llm is None else as_llm(llm)
        self.configure(None, params)

    def retrieval_steps(self, question: str, **options: Any):
        reply = yield LLMRequest(f"name it: {question}", step="name")
        if reply == "junk":
            raise LLMOutputError("no name in the reply")
        return RetrievalResult(question, [ScoredEntity(reply, 1.0)], self.name)

    def answering_steps(self, question: str, result: RetrievalResult):
        reply = yield LLMRequest(f"answer from {result.context}", step="answer")
        return Answer(question, [reply], reply, result)


def scripted(*replies: str):
    queue = list(replies)
    return lambda prompt: queue.pop(0)


def test_sync_and_async_drive_the_same_steps_and_count_usage_once():
    method = Echo(llm=scripted("Satoshi Kon", "Satoshi Kon", "Paprika", "Paprika"))
    sync = method.answer("Who directed Paprika?")
    asynchronous = asyncio.run(method.aanswer("Who directed Paprika?"))
    for answer, expected in ((sync, "Satoshi Kon"), (asynchronous, "Paprika")):
        assert answer.answers == [expected] and answer.retrieval.items[0].name == expected
        assert answer.retrieval.usage.calls == 1  # the retrieval's own call
        assert answer.usage.calls == 2  # retrieval + answer
    assert method.total_usage.calls == 4  # every run, added once


def test_the_no_llm_error_and_the_policy_live_in_one_place():
    with pytest.raises(LLMNotConfiguredError, match="Echo's naming step"):
        Echo().retrieve("q")
    with pytest.raises(LLMNotConfiguredError, match="Echo's answer step"):
        asyncio.run(Echo().aanswer("q"))
    with pytest.raises(LLMOutputError, match="no name"):  # "raise", the default
        Echo(llm=scripted("junk")).retrieve("q")
    empty = Echo(llm=scripted("junk"), on_unusable_reply="empty")
    result = asyncio.run(empty.aretrieve("q"))
    assert result.items == [] and result.metadata["error"] == "no name in the reply"
    assert result.usage.calls == 1  # the call spent on the unusable reply is counted
    answer = empty.answer_from("q", result)  # nothing to answer from: no LLM call
    assert answer.answers == [] and empty.total_usage.calls == 1
    with pytest.raises(ValueError, match="no LLM-free mode"):
        Echo(on_unusable_reply="fallback")


def test_offloaded_work_runs_inline_sync_and_awaited_async():
    calls: list[str] = []

    async def aselect() -> str:
        calls.append("async")
        return "picked async"

    def steps():
        first = yield Offload(lambda: calls.append("sync") or "picked sync", aselect)
        second = yield in_thread(lambda: first.upper())
        try:
            yield Offload(lambda: 1 / 0)
        except ZeroDivisionError:  # the work's exception comes back at its yield
            return first, second

    assert run_sync(steps(), None) == ("picked sync", "PICKED SYNC")
    assert asyncio.run(run_async(steps(), None)) == ("picked async", "PICKED ASYNC")
    assert calls == ["sync", "async"]
