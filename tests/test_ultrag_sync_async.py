"""UltRAG's retrieve and aretrieve run one step generator: same prompts, calls, usage, results.

Every scripted conversation runs through both drivers on a fresh scripted LlamaIndex LLM and the
two runs must agree on everything observable: the prompts sent (system message included), the
call count, the token usage, the items and the metadata (or the raised error).
"""

from __future__ import annotations

import asyncio

import pytest
from llm_fakes import ScriptedLlamaLLM

from kgrag import KnowledgeGraph
from kgrag.errors import LLMOutputError
from kgrag.llm.steps import LLMRequest, ask_and_parse, run_async, run_sync
from kgrag.methods.ultrag import UltRAG


@pytest.fixture(autouse=True)
def _symbolic_executor_by_default(monkeypatch):
    """These tests pin the crisp scores of the symbolic executor (memberships exactly 1.0,
    hand-checked answer sets); the neural executor, UltRAG's default, is tested in
    test_ultrag_neural.py / test_ultrag_executors.py. Explicit ``executor=`` arguments win."""
    from kgrag.methods.ultrag import pipeline

    monkeypatch.setattr(pipeline, "DEFAULT_EXECUTOR", "symbolic")

TOKENS = {"prompt_tokens": 11, "completion_tokens": 4}


def graph() -> KnowledgeGraph:
    triples = [("hub", "member", f"m{i}") for i in range(5)]
    triples += [("m0", "likes", "m1"), ("m2", "likes", "m1")]
    return KnowledgeGraph.from_triples(triples)


def hub() -> str:
    return f"Q{graph().node_index['hub']}"


def run_both(script: list[str], **options):
    """``(sync, async)`` outcomes: ``(result or raised error, prompts, usage)`` for each."""
    outcomes = []
    for use_async in (False, True):
        llm = ScriptedLlamaLLM(replies=list(script), prompts=[], usage=dict(TOKENS))
        method = UltRAG(graph(), llm=llm, linking="exact", arbitrator="margin", **options)
        try:
            result = (asyncio.run(method.aretrieve("Who are the members?")) if use_async
                      else method.retrieve("Who are the members?"))
        except Exception as exc:  # noqa: BLE001 -- compared below: same type and message
            result = exc
        outcomes.append((result, list(llm.prompts), method.llm.usage))
    return outcomes


def assert_same(sync, asynchronous):
    (s_result, s_prompts, s_usage), (a_result, a_prompts, a_usage) = sync, asynchronous
    assert s_prompts == a_prompts
    assert s_usage == a_usage
    if isinstance(s_result, Exception):
        assert type(s_result) is type(a_result) and str(s_result) == str(a_result)
        return
    assert s_result.usage == a_result.usage
    assert s_result.metadata == a_result.metadata
    assert [(e.name, e.score, e.source, e.metadata) for e in s_result.items] == \
           [(e.name, e.score, e.source, e.metadata) for e in a_result.items]


@pytest.mark.parametrize("script, options, calls", [
    ([f"<query>{hub()} -> member</query>"], {}, 1),
    # re-asks: an unparsable reply, then an unknown relation, then a good query
    (["AND(", f"<query>{hub()} -> P99</query>", f"{hub()} -> member"], {"max_reasks": 2}, 3),
    # the re-asks run out: on_unusable_reply="empty" gives an empty result with the parse error
    (["hub", "AND(hub -> member)"], {"max_reasks": 1, "on_unusable_reply": "empty"}, 2),
    # Algorithm 1's decider: an empty answer set asks for a new query
    (["m3 -> likes", f"{hub()} -> member", "unused"], {"max_rounds": 3}, 2),
    # both loops at once: an empty round, then a re-ask inside the second round
    (["m3 -> likes", "not a query", f"{hub()} -> member"], {"max_rounds": 2}, 3),
])
def test_retrieve_and_aretrieve_have_the_same_conversation(script, options, calls):
    sync, asynchronous = run_both(script, **options)
    assert_same(sync, asynchronous)
    result, prompts, usage = sync
    assert result.usage.calls == len(prompts) == calls
    assert result.usage.prompt_tokens == calls * TOKENS["prompt_tokens"]
    assert usage.calls == calls


def test_the_reask_path_sends_the_error_back_on_both_drivers():
    script = ["AND(", f"<query>{hub()} -> P99</query>", f"{hub()} -> member"]
    (result, prompts, _), _ = run_both(script, max_reasks=2)
    assert "could not be used" not in prompts[0]
    assert "could not be used" in prompts[1] and "could not be used" in prompts[2]
    assert "P99" in prompts[2]  # the second re-ask names the unknown relation
    assert [e.name for e in result.items] == ["m0", "m1", "m2", "m3", "m4"]
    (failed, _, _), _ = run_both(["hub", "AND(hub -> member)"], max_reasks=1,
                                 on_unusable_reply="empty")
    assert failed.items == [] and "AND needs at least two operands" in failed.metadata["error"]


def test_errors_are_the_same_on_both_drivers():
    # on_unusable_reply="raise" (the default): the last parse error is raised by both
    sync, asynchronous = run_both(["nope", "nope"])
    assert isinstance(sync[0], LLMOutputError)
    assert_same(sync, asynchronous)
    sync, asynchronous = run_both(["nope", "nope"], on_unusable_reply="empty")
    assert sync[0].items == [] and "nope" in sync[0].metadata["error"]
    assert_same(sync, asynchronous)
    # the LLM itself fails (the script runs out after one re-ask): the error propagates as is
    sync, asynchronous = run_both(["nope"], max_reasks=1)
    assert isinstance(sync[0], IndexError)
    assert len(sync[1]) == 2 and sync[2].calls == 1  # the re-ask was sent, never answered
    assert_same(sync, asynchronous)


def test_an_llm_output_error_raised_by_the_model_is_handled_where_the_call_was_made():
    def refusing(prompt: str) -> str:
        raise LLMOutputError("the model refused")

    for use_async in (False, True):
        method = UltRAG(graph(), llm=refusing, linking="exact", arbitrator="margin",
                        on_unusable_reply="empty")
        result = asyncio.run(method.aretrieve("q")) if use_async else method.retrieve("q")
        assert result.items == [] and result.metadata["error"] == "the model refused"


def test_the_sync_driver_runs_inside_an_event_loop():
    method = UltRAG(graph(), llm=ScriptedLlamaLLM(replies=[f"{hub()} -> member"], prompts=[]),
                    linking="exact", arbitrator="margin")

    async def caller():
        return method.retrieve("q")  # no loop of its own: callable from async code

    assert len(asyncio.run(caller()).items) == 5


def test_ask_and_parse_steps_on_their_own():
    def parse(reply: str) -> int:
        if not reply.isdigit():
            raise LLMOutputError(f"not a number: {reply!r}")
        return int(reply)

    steps = ask_and_parse("How many?", parse, retries=1, system="be brief")
    assert next(steps) == LLMRequest("How many?", "be brief")
    retry = steps.send("many")
    assert retry.system == "be brief" and retry.prompt.startswith("How many?\n\n")
    assert "not a number: 'many'" in retry.prompt
    with pytest.raises(StopIteration) as done:
        steps.send("42")
    assert done.value.value == (42, "42")

    class Replies:
        def __init__(self, *texts: str) -> None:
            self.texts = list(texts)

        def complete(self, prompt: str, *, system: str | None = None) -> str:
            return self.texts.pop(0)

        async def acomplete(self, prompt: str, *, system: str | None = None) -> str:
            return self.texts.pop(0)

    assert run_sync(ask_and_parse("n?", parse, retries=0), Replies("7")) == (7, "7")
    assert asyncio.run(run_async(ask_and_parse("n?", parse, retries=1),
                                 Replies("x", "8"))) == (8, "8")
    with pytest.raises(LLMOutputError, match="'y'"):
        run_sync(ask_and_parse("n?", parse, retries=1), Replies("x", "y", "9"))
