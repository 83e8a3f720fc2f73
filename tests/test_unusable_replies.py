"""One policy for unusable LLM replies, for all five methods through both frameworks.

docs/examples.md, "Unusable LLM replies": after a step's bounded re-ask, an unusable reply
raises :class:`~kgrag.errors.LLMOutputError` (``on_unusable_reply="raise"``, the default) or,
opted in with ``"empty"``, gives an empty result, a logged warning and the reason in
``metadata["error"]``. A model that runs out of replies is :class:`~kgrag.errors.LLMCallError`
under either policy. Every case runs the real LangChain retriever (sync ``invoke`` and async
``ainvoke``) or the real LlamaIndex query engine (``query`` / ``aquery``) over the packaged
demo graph (KET-RAG: over three sentences), with the frameworks' scripted fake models.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

import langchain_kgrag
import llama_index_kgrag
from kgrag import KnowledgeGraph
from kgrag.data import demo_data_path
from kgrag.errors import LLMCallError, LLMOutputError
from kgrag.graph import read_triples
from kgrag.methods.base import UNUSABLE_REPLY_POLICIES
from langchain_kgrag.testing import scripted_chat
from llama_index_kgrag.testing import scripted_llm

METHODS = ["byokg", "simgrag", "graphraft", "ultrag", "ketrag"]
FRAMEWORKS = ["langchain", "llama_index"]
#: the three fakes: replies nothing can parse, blank replies, and a model with no reply left
FAKES = {"junk": ["blah blah"] * 40, "empty": [""] * 40, "exhausted": []}
QUESTION = "Who directed Tokyo Godfathers?"
DOCS = ["Satoshi Kon directed Tokyo Godfathers. Madhouse animated Tokyo Godfathers.",
        "Tokyo Godfathers was released in Japan in 2003.",
        "Keiko Nobumoto wrote Tokyo Godfathers with Satoshi Kon."]
#: KET-RAG reads LLM replies while indexing: every chunk is a key chunk (budget 1.0)
KETRAG_BUILD = dict(budget=1.0, chunk_size=30, splits=1, progress=False, max_workers=1)


@pytest.fixture(scope="module")
def movies() -> KnowledgeGraph:
    return read_triples(demo_data_path())


def fake(framework: str, replies: list[str]):
    """LangChain's GenericFakeChatModel or the scripted LlamaIndex CustomLLM."""
    return scripted_chat(*replies) if framework == "langchain" else scripted_llm(*replies)


def build(name: str, framework: str, llm, movies, embedder, **params):
    """The LangChain retriever or the LlamaIndex query engine of ``name``, built by the
    adapter's own factory (``params`` pass through to the method)."""
    if framework == "langchain":
        cls = langchain_kgrag.retriever_for(name)
    else:
        cls = llama_index_kgrag.query_engine_for(name)
    if name == "ketrag":
        return cls.from_documents(DOCS, llm=llm, embedder=embedder, **KETRAG_BUILD, **params)
    return cls.from_graph(movies, llm=llm, embedder=embedder, **params)


def ask(target, framework: str, mode: str):
    """Retrieve (LangChain) or retrieve and answer (LlamaIndex), sync or async."""
    if framework == "langchain":
        return asyncio.run(target.ainvoke(QUESTION)) if mode == "async" \
            else target.invoke(QUESTION)
    return asyncio.run(target.aquery(QUESTION)) if mode == "async" else target.query(QUESTION)


def warnings_about_unusable(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING
            and r.name.startswith("kgrag.") and "on_unusable_reply='empty'" in r.getMessage()]


# ------------------------------------------------------------------ the default: typed errors
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", list(FAKES))
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("name", METHODS)
def test_default_policy_raises_a_typed_error(name, framework, kind, mode, movies, minilm):
    expected = LLMCallError if kind == "exhausted" else LLMOutputError
    with pytest.raises(expected) as caught:
        # KET-RAG reads its replies while indexing, so building fails already
        target = build(name, framework, fake(framework, FAKES[kind]), movies, minilm)
        ask(target, framework, mode)
    # an exhausted model is never taken for an unusable reply, and vice versa
    other = LLMOutputError if kind == "exhausted" else LLMCallError
    assert not isinstance(caught.value, other)


# ------------------------------------------------------------------ opted in: empty results
@pytest.mark.parametrize("kind", ["junk", "empty"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("name", [m for m in METHODS if m != "ketrag"])
def test_opt_in_gives_an_empty_result_a_warning_and_the_reason(name, framework, kind, movies,
                                                              minilm, caplog):
    target = build(name, framework, fake(framework, FAKES[kind]), movies, minilm,
                   on_unusable_reply="empty")
    assert target.method.on_unusable_reply == "empty"  # passed through by the factory
    with caplog.at_level(logging.WARNING, logger="kgrag"):
        if framework == "langchain":
            assert target.invoke(QUESTION) == []
            result = target.retrieve_result(QUESTION)  # the whole result, for its metadata
            assert result.items == [] and result.metadata["unusable_reply"] is True
            reason = result.metadata["error"]
        else:
            response = target.query(QUESTION)
            assert response.source_nodes == [] and response.metadata["answers"] == []
            reason = response.metadata["error"]
            # no answer call is spent on an empty retrieval; the text says why
            assert response.response == f"No answer: {reason}."
    assert reason and warnings_about_unusable(caplog)
    assert reason in warnings_about_unusable(caplog)[0].getMessage()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_opt_in_ketrag_indexes_without_the_unusable_chunks(framework, movies, minilm, caplog):
    with caplog.at_level(logging.WARNING, logger="kgrag"):
        target = build("ketrag", framework, fake(framework, FAKES["junk"]), movies, minilm,
                       on_unusable_reply="empty")
    index = target.method.index
    assert index.skeleton.graph.num_nodes == 0  # every chunk's extraction was unusable
    assert index.cost["failed_chunks"] == index.cost["key_chunks"] > 0
    assert warnings_about_unusable(caplog)
    result = target.method.retrieve(QUESTION)
    assert "extraction replies were unusable" in result.metadata["error"]
    assert result.metadata["failed_chunks"] == index.cost["failed_chunks"]
    assert result.items  # the keyword channel reads the text itself: no LLM involved


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("name", METHODS)
def test_an_exhausted_model_is_a_call_error_under_either_policy(name, framework, movies,
                                                               minilm):
    with pytest.raises(LLMCallError):
        target = build(name, framework, fake(framework, []), movies, minilm,
                       on_unusable_reply="empty")
        ask(target, framework, "async")


# ------------------------------------------------------------------ answers and answer chains
@pytest.mark.parametrize("name", [m for m in METHODS if m != "ketrag"])
def test_answer_chain_raises_or_answers_nothing(name, movies, minilm):
    chain = build(name, "langchain", fake("langchain", FAKES["junk"]), movies,
                  minilm).answer_chain()
    with pytest.raises(LLMOutputError):
        chain.invoke(QUESTION)
    retriever = build(name, "langchain", fake("langchain", FAKES["junk"]), movies, minilm,
                      on_unusable_reply="empty")
    out = asyncio.run(retriever.answer_chain().ainvoke(QUESTION))
    assert out["answers"] == [] and out["sources"] == [] and out["error"]
    assert out["answer"] == f"No answer: {out['error']}."
    answer = retriever.method.answer(QUESTION)  # the core API: the same outcome
    assert answer.answers == [] and answer.retrieval.metadata["error"] == out["error"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_blank_answer_reply_is_reasked_once_then_unusable(framework, movies, minilm):
    # KET-RAG's keyword-only index (budget 0) needs no LLM: only the answer reads a reply
    llm = fake(framework, ["", "", "", ""])
    cls = (langchain_kgrag.retriever_for("ketrag") if framework == "langchain"
           else llama_index_kgrag.retriever_for("ketrag"))
    retriever = cls.from_documents(DOCS, llm=llm, embedder=minilm, budget=0, chunk_size=30,
                                   splits=1, progress=False)
    method = retriever.method
    with pytest.raises(LLMOutputError, match="empty"):
        method.answer(QUESTION)
    method.on_unusable_reply = "empty"
    answer = asyncio.run(method.aanswer(QUESTION))
    assert answer.answers == [] and answer.text == "No answer: the reply is empty."
    assert answer.retrieval.items and answer.usage.calls == 2  # the call and its re-ask


def test_ultrag_blank_arbitration_is_unusable(movies):
    from kgrag.methods.ultrag import UltRAG

    query = '<query>"Tokyo Godfathers" -> directed_by</query>'
    method = UltRAG(movies, llm=scripted_chat(query, "", "", query, "", ""), linking="exact",
                    executor="symbolic")
    with pytest.raises(LLMOutputError, match="empty"):
        method.answer(QUESTION)
    method.on_unusable_reply = "empty"
    answer = method.answer(QUESTION)
    assert answer.answers == [] and [e.name for e in answer.retrieval.items] == ["Satoshi Kon"]
    assert answer.retrieval.metadata["error"] == "the reply is empty"


# ------------------------------------------------------------------ the parameter itself
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("name", METHODS)
def test_other_values_are_a_value_error(name, framework, movies, minilm):
    llm = fake(framework, FAKES["junk"])
    with pytest.raises(ValueError, match="on_unusable_reply must be one of"):
        build(name, framework, llm, movies, minilm, on_unusable_reply="ignore")


@pytest.mark.parametrize("name", ["byokg", "simgrag", "graphraft", "ultrag"])
def test_constructor_and_attribute_take_the_parameter(name, movies, minilm):
    from kgrag.methods.registry import get_method

    cls = get_method(name).method_class()
    method = cls(movies, embedder=minilm, on_unusable_reply="empty")
    assert method.on_unusable_reply == "empty"
    assert cls.from_graph(movies, embedder=minilm).on_unusable_reply == "raise"  # default
    for value in UNUSABLE_REPLY_POLICIES:
        if value == "fallback" and not cls.has_llm_free_mode:
            with pytest.raises(ValueError, match="no LLM-free mode"):
                method.on_unusable_reply = value
            continue
        method.on_unusable_reply = value
        assert method.on_unusable_reply == value
    with pytest.raises(ValueError):
        method.on_unusable_reply = "skip"


def test_ultrag_old_name_is_gone(movies):
    from kgrag.methods.ultrag import UltRAG

    with pytest.raises(TypeError, match="unknown UltRAG parameter.*on_invalid_query"):
        UltRAG(movies, linking="exact", on_invalid_query="empty")
    assert not hasattr(UltRAG(movies, linking="exact"), "on_invalid_query")


def test_a_method_without_its_own_config_gets_the_policy(movies):
    """A method whose constructor never calls ``configure`` still has the base config: the
    policy defaults to "raise" and is settable."""
    from kgrag.context.types import RetrievalResult
    from kgrag.methods.base import KGMethod

    class Echo(KGMethod):
        name = "echo"

        def __init__(self, graph, *, llm=None, embedder=None):
            self.graph = graph

        def retrieve(self, question):
            try:
                raise LLMOutputError("not a pattern")
            except LLMOutputError as exc:
                return self.unusable_reply(question, exc)

    with pytest.raises(LLMOutputError):
        Echo.from_graph(movies).retrieve("q")
    method = Echo.from_graph(movies)
    method.on_unusable_reply = "empty"
    result = method.retrieve("q")
    assert isinstance(result, RetrievalResult) and result.items == []
    assert result.metadata["error"] == "not a pattern"
    with pytest.raises(ValueError):
        method.on_unusable_reply = "maybe"
    with pytest.raises(TypeError):
        Echo.from_graph(movies, on_unusable_reply="empty")  # its constructor does not take it


# ---------------------------------------------------------------- on_unusable_reply="fallback"
@pytest.mark.parametrize("name, replies", [
    ("byokg", ["blah blah"] * 40),  # unreadable
    ("graphraft", ["blah blah"] * 40),
    ("byokg", ["<entities></entities>"] * 40),  # readable, but linking nothing
    # the prompt's task text repeated, with tags that would link a graph node (an echo)
    ("byokg", ["## Task 1: entity extraction\nList every topic entity of the question that "
               "must be found in the graph, one per line inside <entities> tags.\n"
               "<entities>\nSatoshi Kon\n</entities>"] * 40),
])
def test_fallback_is_the_llm_free_retrieval(name, replies, movies, minilm, caplog):
    """A weak model never makes the retrieval worse than no model: its unusable replies give
    exactly the LLM-free mode's result, the reason recorded, the answer step still run."""
    from kgrag.methods.registry import get_method

    cls = get_method(name).method_class()
    free = cls.from_graph(movies, embedder=minilm).retrieve(QUESTION)
    assert free.items  # the LLM-free mode finds something here
    method = cls.from_graph(movies, llm=scripted_chat(*replies), embedder=minilm,
                            on_unusable_reply="fallback")
    with caplog.at_level(logging.WARNING):
        result = method.retrieve(QUESTION)
    assert [i.verbalize() for i in result.items] == [i.verbalize() for i in free.items]
    assert result.metadata["fallback"] and not method.was_unusable(result)
    assert result.usage.calls >= 1 and "LLM-free" in caplog.text
    answer = method.answer(QUESTION)  # the retrieval falls back; the LLM still answers
    assert answer.retrieval.metadata["fallback"] and not answer.text.startswith("No answer")
    assert answer.usage.calls > result.usage.calls


@pytest.mark.parametrize("name", ["simgrag", "ultrag"])
def test_fallback_is_refused_by_methods_without_an_llm_free_mode(name, movies, minilm):
    from kgrag.methods.registry import get_method

    cls = get_method(name).method_class()
    with pytest.raises(ValueError, match="no LLM-free mode"):
        cls.from_graph(movies, llm=scripted_chat("x"), embedder=minilm,
                       on_unusable_reply="fallback")


def test_fallback_answer_reply_unusable_keeps_the_retrieval(movies, minilm):
    """A blank answer reply under "fallback": the LLM-free ranking's best candidate answers;
    so does a reply that names nothing retrieved ("x"); a prose reply naming a retrieved
    entity answers that entity."""
    from kgrag.methods.byokg import ByoKGRAG

    method = ByoKGRAG.from_graph(movies, llm=scripted_chat("x"), embedder=minilm,
                                 on_unusable_reply="fallback")
    free = method.retrieve_llm_free(QUESTION)
    best = free.metadata["answer_candidates"][:1]
    answer = method.answer_from(QUESTION, free)
    assert answer.answers == best and free.metadata["fallback"]
    prose = f"It is a classic, and {best[0]} made it in a studio."
    method = ByoKGRAG.from_graph(movies, llm=scripted_chat(prose), embedder=minilm,
                                 on_unusable_reply="fallback")
    free = method.retrieve_llm_free(QUESTION)
    answer = method.answer_from(QUESTION, free)
    assert answer.answers == best and answer.text == prose and "fallback" not in free.metadata
    method = ByoKGRAG.from_graph(movies, llm=scripted_chat("", ""), embedder=minilm,
                                 on_unusable_reply="fallback")
    answer = method.answer_from(QUESTION, free)
    assert answer.answers == free.metadata["answer_candidates"][:1]
    assert answer.retrieval is free and free.metadata["fallback"]
