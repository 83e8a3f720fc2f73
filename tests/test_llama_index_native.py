"""LlamaIndex adapters as first-class LlamaIndex components, with LlamaIndex's own classes:
Settings, RetrieverQueryEngine semantics (postprocessors, synthesizers, streaming, async),
PromptMixin, instrumentation events and spans, similarity_top_k."""

from __future__ import annotations

import asyncio
from typing import Any

import llama_index.core.instrumentation as instrument
import pytest
from llama_index.core import PromptTemplate, Settings, get_response_synthesizer
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import LLMCompletionStartEvent
from llama_index.core.instrumentation.events.retrieval import (
    RetrievalEndEvent,
    RetrievalStartEvent,
)
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llm_fakes import ScriptedLlamaLLM

from kgrag import KnowledgeGraph
from llama_index_kgrag import SimGRAGRetriever, UltRAGQueryEngine, UltRAGRetriever

TRIPLES = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"), ("Paprika", "directed_by", "Satoshi Kon"),
    ("Perfect Blue", "directed_by", "Satoshi Kon"), ("Paprika", "release_year", "2006"),
    ("Akira", "directed_by", "Katsuhiro Otomo"),
]
QUERY = '<query>"Satoshi Kon" -> directed_by_inv</query>'
ARBITRATION = "The dream film is <answers>Paprika</answers>"


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_triples(TRIPLES)


def _reply(prompt: str) -> str:
    return QUERY if "<query></query>" in prompt else ARBITRATION


def WordStreamLLM(**options: Any) -> ScriptedLlamaLLM:  # noqa: N802 (was a class)
    """A real LlamaIndex LLM (the shared scripted one): the query reply for query prompts, the
    arbitration reply for arbitration prompts; streams word by word; records every prompt."""
    return ScriptedLlamaLLM(responder=_reply, model_name="word-stream", **options)


@pytest.fixture()
def settings():
    """Set Settings.llm / embed_model for one test and restore them after."""
    saved = (Settings._llm, Settings._embed_model)
    yield Settings
    Settings._llm, Settings._embed_model = saved


def test_settings_llm_drives_a_query_engine(kg, settings):
    llm = WordStreamLLM(prompts=[])
    settings.llm = llm
    settings.embed_model = MockEmbedding(embed_dim=8)
    # no llm= passed
    engine = UltRAGQueryEngine.from_graph(kg, linking="exact", executor="symbolic")
    assert isinstance(engine, RetrieverQueryEngine)
    response = engine.query("Which Satoshi Kon film is about dreams?")
    assert response.metadata["answers"] == ["Paprika"] and response.response == "Paprika"
    assert len(llm.prompts) == 2 and response.metadata["usage"]["calls"] == 2
    retriever = SimGRAGRetriever.from_graph(kg)  # embeds with Settings.embed_model
    assert retriever.method.embedder.embed_model is settings.embed_model


def test_update_prompts_changes_the_prompt_the_llm_receives(kg):
    llm = WordStreamLLM(prompts=[])
    engine = UltRAGQueryEngine.from_graph(kg, llm=llm, linking="exact", executor="symbolic")
    prompts = engine.get_prompts()
    assert {"query", "arbitration", "arbitration_system"} <= set(prompts)
    assert isinstance(prompts["arbitration"], PromptTemplate)
    engine.update_prompts({"arbitration": PromptTemplate(
        "PICK for {question} among:\n{candidates}\nAnswer in <answers></answers>.")})
    assert engine.get_prompts()["arbitration"].template.startswith("PICK for {question}")
    engine.query("Which Satoshi Kon film is about dreams?")
    assert "\n\nPICK for Which Satoshi Kon film is about dreams? among:\n" in llm.prompts[-1]
    with pytest.raises(ValueError, match="cannot use"):
        engine.update_prompts({"arbitration": PromptTemplate("{nodes}")})


def test_the_retriever_owns_the_methods_prompts_and_the_engine_delegates(kg):
    """get_prompts() / update_prompts() on the RETRIEVER (it was {} before): the prompt its
    retrieval sends changes; a query engine over it shows and updates the same prompts."""
    llm = WordStreamLLM(prompts=[])
    retriever = UltRAGRetriever.from_graph(kg, llm=llm, linking="exact", executor="symbolic")
    prompts = retriever.get_prompts()
    assert {"query", "arbitration"} <= set(prompts)
    assert isinstance(prompts["query"], PromptTemplate)
    retriever.update_prompts({"query": PromptTemplate(
        "WRITE ONE for {question}\nRelations: {relations}\nSeeds: {seeds}\n{rules}\n"
        "Reply in <query></query>.")})
    nodes = retriever.retrieve("Which Satoshi Kon film is about dreams?")
    assert {n.node.metadata["entity"] for n in nodes} == {"Tokyo Godfathers", "Paprika",
                                                          "Perfect Blue"}
    assert "WRITE ONE for Which Satoshi Kon film is about dreams?\nRelations: " in llm.prompts[0]
    engine = UltRAGQueryEngine(retriever)
    assert engine.get_prompts()["query"].template.startswith("WRITE ONE for {question}")
    engine.update_prompts({"arbitration": "CHOOSE for {question}:\n{candidates}"})
    assert retriever.get_prompts()["arbitration"].template.startswith("CHOOSE for {question}")
    with pytest.raises(ValueError, match="no prompt 'nope'"):
        retriever.update_prompts({"nope": "x"})


def test_as_tool_describes_its_input_and_passes_the_question_as_is(kg):
    from llama_index.core.tools import QueryEngineTool, RetrieverTool

    llm = WordStreamLLM(prompts=[])
    retriever = UltRAGRetriever.from_graph(kg, llm=llm, linking="exact", executor="symbolic")
    tool = retriever.as_tool()
    assert isinstance(tool, RetrieverTool)
    assert tool.metadata.name == "knowledge_graph_answer_question"
    schema = tool.metadata.to_openai_tool()["function"]["parameters"]
    assert schema["required"] == ["input"]
    assert "question" in schema["properties"]["input"]["description"]
    output = tool.call(input="Which Satoshi Kon film is about dreams?")  # as an agent calls it
    assert "input is" not in llm.prompts[-1]
    assert "Which Satoshi Kon film is about dreams?" in llm.prompts[-1]
    assert "Paprika" in output.content
    aoutput = asyncio.run(tool.acall(input="Which Satoshi Kon film is about dreams?"))
    assert "input is" not in llm.prompts[-1] and "Paprika" in aoutput.content
    engine_tool = UltRAGQueryEngine(retriever).as_tool()
    assert isinstance(engine_tool, QueryEngineTool)
    props = engine_tool.metadata.get_parameters_dict()["properties"]
    assert "question" in props["input"]["description"]


def test_a_streamed_answer_arrives_in_pieces(kg):
    engine = UltRAGQueryEngine.from_graph(kg, llm=WordStreamLLM(prompts=[]), linking="exact",
                                          executor="symbolic",
                                          streaming=True)
    response = engine.query("Which Satoshi Kon film is about dreams?")
    pieces = list(response.response_gen)
    # the reply's text only: no <answers> tags (issue 29, item 8)
    assert len(pieces) > 3 and "".join(pieces) == "The dream film is Paprika"
    assert response.metadata["answers"] == ["Paprika"]  # filled when the stream ends
    assert {n.node.metadata["entity"] for n in response.source_nodes} == {
        "Tokyo Godfathers", "Paprika", "Perfect Blue"}

    async def astream() -> tuple[list[str], dict]:
        aengine = UltRAGQueryEngine.from_graph(kg, llm=WordStreamLLM(prompts=[]),
                                               linking="exact", executor="symbolic", streaming=True)
        aresponse = await aengine.aquery("Which Satoshi Kon film is about dreams?")
        return [p async for p in aresponse.async_response_gen()], aresponse.metadata

    apieces, ameta = asyncio.run(astream())
    assert apieces == pieces and ameta["answers"] == ["Paprika"]


class KeepFirst(BaseNodePostprocessor):
    """Keeps the best node only."""

    def _postprocess_nodes(self, nodes, query_bundle=None):
        return nodes[:1]


def test_node_postprocessors_custom_synthesizer_top_k_and_async(kg):
    llm = WordStreamLLM(prompts=[])
    engine = UltRAGQueryEngine.from_graph(kg, llm=llm, linking="exact", executor="symbolic",
                                          node_postprocessors=[KeepFirst()])
    response = asyncio.run(engine.aquery("Which Satoshi Kon film is about dreams?"))
    [kept] = response.source_nodes
    candidates = llm.prompts[-1].split("highest first:\n")[1]
    assert kept.node.metadata["entity"] in candidates
    assert candidates.count(" | ") == 2  # one 'id | name | probability' line: the kept node
    # LlamaIndex's own synthesizer over the same retrieval (RetrieverQueryEngine semantics)
    synth_llm = WordStreamLLM(prompts=[])
    engine = UltRAGQueryEngine.from_graph(
        kg, llm=llm, linking="exact", executor="symbolic", similarity_top_k=2,
        response_synthesizer=get_response_synthesizer(llm=synth_llm, response_mode="compact"))
    response = engine.query("Which Satoshi Kon film is about dreams?")
    assert len(response.source_nodes) == 2 and synth_llm.prompts  # the synthesizer answered
    assert "response_synthesizer:text_qa_template" in engine.get_prompts()


class EventLog(BaseEventHandler):
    events: list[Any] = []  # noqa: RUF012

    @classmethod
    def class_name(cls) -> str:
        return "EventLog"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.events.append(event)


def test_retrieval_emits_llama_index_events_with_llm_spans_nested(kg):
    root = instrument.get_dispatcher()
    events, spans = EventLog(events=[]), SimpleSpanHandler()
    root.add_event_handler(events)
    root.add_span_handler(spans)
    try:
        retriever = UltRAGRetriever.from_graph(kg, llm=WordStreamLLM(prompts=[]),
                                               linking="exact", executor="symbolic",
                                               similarity_top_k=2)
        nodes = retriever.retrieve("Which films did Satoshi Kon direct?")
        asyncio.run(retriever.aretrieve("Which films did Satoshi Kon direct?"))
    finally:
        root.event_handlers.remove(events)
        root.span_handlers.remove(spans)
    assert len(nodes) == 2  # similarity_top_k
    kinds = [type(e) for e in events.events]
    assert kinds.count(RetrievalStartEvent) == 2 and kinds.count(RetrievalEndEvent) == 2
    parents = {s.id_: s.parent_id for s in spans.completed_spans}
    starts = [e for e in events.events if isinstance(e, RetrievalStartEvent)]
    llm_events = [e for e in events.events if isinstance(e, LLMCompletionStartEvent)]
    assert llm_events  # (CustomLLM's async path emits one event per wrapper layer)

    def ancestors(span: str | None) -> list[str]:
        chain = []
        while span is not None:
            chain.append(span)
            span = parents.get(span)
        return chain

    retrieval_spans = {e.span_id for e in starts}
    nested = {next(iter(set(ancestors(e.span_id)) & retrieval_spans), None) for e in llm_events}
    assert nested == retrieval_spans  # every LLM call ran inside a retriever span, both calls


def test_concurrent_aretrieve_calls_each_get_their_own_usage(kg):
    retriever = UltRAGRetriever.from_graph(kg, llm=WordStreamLLM(prompts=[]), linking="exact",
                                           executor="symbolic")

    async def many() -> list:
        return await asyncio.gather(*(retriever.aretrieve(f"Which films did Satoshi Kon "
                                                          f"direct? {i}") for i in range(30)))

    for i, nodes in enumerate(asyncio.run(many())):
        assert {n.node.metadata["usage_calls"] for n in nodes} == {1}
        assert nodes[0].node.metadata["question"].endswith(f"? {i}")
