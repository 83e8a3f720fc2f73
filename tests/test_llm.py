"""The LLM port: adapters over the frameworks' own fake models, usage counting, parsing."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from llama_index.core.llms.mock import MockLLM
from llm_fakes import ScriptedLlamaLLM

from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.llm import (
    CallableLLM,
    LangChainLLM,
    LlamaIndexLLM,
    as_llm,
    complete_and_parse,
    extract_json_object,
    extract_tag,
    tag_lines,
)


def test_as_llm_requires_a_model():
    with pytest.raises(LLMNotConfiguredError, match="llm="):
        as_llm(None, what="SimGRAG pattern generation")


def test_as_llm_rejects_other_objects():
    with pytest.raises(TypeError, match="LangChain chat model"):
        as_llm(42)


def test_langchain_chat_model_adapter_counts_calls_and_tokens():
    chat = GenericFakeChatModel(messages=iter([
        AIMessage(content="<entities>\nJamaica\n</entities>",
                  usage_metadata={"input_tokens": 11, "output_tokens": 4, "total_tokens": 15}),
        AIMessage(content="second"),
    ]))
    llm = as_llm(chat)
    assert isinstance(llm, LangChainLLM)
    with llm.track() as usage:
        assert tag_lines(llm.complete("q?", system="be brief"), "entities") == ["Jamaica"]
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (1, 11, 4)
    assert asyncio.run(llm.acomplete("again")) == "second"
    assert llm.usage.calls == 2


def test_langchain_fake_list_model_and_llamaindex_mock():
    llm = as_llm(FakeListChatModel(responses=["a", "b"]))
    assert [llm.complete("x"), llm.complete("y")] == ["a", "b"]
    mock = as_llm(MockLLM())
    assert isinstance(mock, LlamaIndexLLM)
    assert mock.complete("echo me") == "echo me"  # MockLLM echoes the prompt
    assert mock.usage.calls == 1


def test_llamaindex_custom_llm_adapter_counts_tokens():
    scripted = ScriptedLlamaLLM(replies=['{"answer": ["Satoshi Kon"]}'], prompts=[],
                                usage={"prompt_tokens": 7, "completion_tokens": 3})
    llm = as_llm(scripted)
    parsed, raw = complete_and_parse(llm, "who?", extract_json_object)
    assert parsed == {"answer": ["Satoshi Kon"]}
    assert (llm.usage.calls, llm.usage.prompt_tokens, llm.usage.completion_tokens) == (1, 7, 3)


def test_bounded_reask_then_typed_error():
    llm = as_llm(FakeListChatModel(responses=["no json here", "still none", "{'ok': 1}"]))
    with pytest.raises(LLMOutputError):
        complete_and_parse(llm, "give json", extract_json_object, retries=1)
    assert llm.usage.calls == 2  # one ask + one bounded re-ask, never more
    parsed, _ = complete_and_parse(llm, "give json", extract_json_object, retries=0)
    assert parsed == {"ok": 1}


def test_callable_adapter():
    llm = as_llm(lambda prompt: prompt.upper())
    assert isinstance(llm, CallableLLM)
    assert llm.complete("abc") == "ABC" and llm.usage.calls == 1


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("<entities>\nA\nB\n</entities>", ["A", "B"]),
        ("Sure! Here you go:\n<ENTITIES>\n- A\n2. B\n</ENTITIES> done", ["A", "B"]),
        ("<entities>A</entities><entities>C</entities>", ["A"]),  # first tag wins
        ("<entities>\nA\nA\n\n</entities>", ["A"]),
        ("<entities>\nA\nB", ["A", "B"]),  # unclosed final tag
        ("nothing tagged", []),
        ("<entities></entities>", []),
    ],
)
def test_tag_lines(reply, expected):
    assert tag_lines(reply, "entities") == expected


def test_tag_aliases():
    assert extract_tag("<answer>Paris</answer>", "answers", aliases=("answer",)) == "Paris"


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('```json\n{"triples": [["a", "r", "b"]]}\n```', {"triples": [["a", "r", "b"]]}),
        ("Pattern: {'divided': ['x'], 'triples': [('a', 'r', 'b')]} ok",
         {"divided": ["x"], "triples": [("a", "r", "b")]}),
        ('{"a": "}"} trailing {"b": 2}', {"a": "}"}),
        ('{bad} {"good": true}', {"good": True}),
    ],
)
def test_extract_json_object(reply, expected):
    assert extract_json_object(reply) == expected


def test_extract_json_never_evaluates_code():
    with pytest.raises(LLMOutputError):
        extract_json_object("{__import__('os').system('echo pwned')}")


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_parsers_only_raise_their_own_error(text):
    tag_lines(text, "entities")
    try:
        extract_json_object(text)
    except LLMOutputError:
        pass


def test_an_exhausted_fake_model_is_a_typed_error_sync_and_async():
    import asyncio

    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    from kgrag.errors import LLMCallError
    from kgrag.llm.base import as_llm
    from kgrag.llm.steps import acomplete_and_parse, complete_and_parse

    llm = as_llm(GenericFakeChatModel(messages=iter(["only one"])))
    assert complete_and_parse(llm, "q", str)[0] == "only one"
    with pytest.raises(LLMCallError, match="ran out of replies"):
        complete_and_parse(llm, "q", str)
    with pytest.raises(LLMCallError, match="ran out of replies"):
        asyncio.run(acomplete_and_parse(llm, "q", str))
