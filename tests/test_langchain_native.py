"""LangChain adapters as first-class LangChain components, with LangChain's own classes:
callbacks nest, concurrent calls keep their own usage, answers are Runnables that stream,
tools describe their arguments."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda

from kgrag import KnowledgeGraph
from kgrag.context.metadata import unflatten
from langchain_kgrag import KGAnswerChain, KGToolkit, UltRAGRetriever

TRIPLES = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"), ("Paprika", "directed_by", "Satoshi Kon"),
    ("Perfect Blue", "directed_by", "Satoshi Kon"), ("Paprika", "release_year", "2006"),
    ("Tokyo Godfathers", "release_year", "2003"), ("Perfect Blue", "release_year", "1997"),
    ("Akira", "directed_by", "Katsuhiro Otomo"), ("Akira", "release_year", "1988"),
]
QUERY = '"Satoshi Kon" -> directed_by_inv'


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_triples(TRIPLES)


class QueryWriter(BaseChatModel):
    """A real LangChain chat model: always writes QUERY (or the arbitration answer), reports
    prompt tokens = words in the prompt, and yields to the event loop while "thinking"."""

    answer: str = "<answers>Paprika</answers>"

    @property
    def _llm_type(self) -> str:
        return "query-writer"

    def _reply(self, messages: list[Any]) -> AIMessage:
        prompt = "\n".join(str(m.content) for m in messages)
        content = self.answer if "ranked these candidates" in prompt else f"<query>{QUERY}</query>"
        words = len(prompt.split())
        return AIMessage(content=content, usage_metadata={
            "input_tokens": words, "output_tokens": 3, "total_tokens": words + 3})

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        await asyncio.sleep(0.001)  # let the other questions of a batch interleave
        return self._generate(messages)


class RunRecorder(BaseCallbackHandler):
    """Records (kind, run_id, parent_run_id) of every retriever, chain and chat model run."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Any, Any]] = []

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):
        self.runs.append(("retriever", run_id, parent_run_id))

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kw):
        self.runs.append(("llm", run_id, parent_run_id))

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):
        self.runs.append(("chain", run_id, parent_run_id))

    def of(self, kind: str) -> list[tuple[str, Any, Any]]:
        return [r for r in self.runs if r[0] == kind]


def test_callbacks_in_config_see_llm_runs_nested_under_the_retriever(kg):
    retriever = UltRAGRetriever.from_graph(kg, llm=QueryWriter(), linking="exact",
                                           executor="symbolic")
    sync, async_ = RunRecorder(), RunRecorder()
    docs = retriever.invoke("Which films did Satoshi Kon direct?", config={"callbacks": [sync]})
    asyncio.run(retriever.ainvoke("Which films did Satoshi Kon direct?",
                                  config={"callbacks": [async_]}))
    assert len(docs) == 3
    for recorder in (sync, async_):
        [(_, retriever_run, _)] = recorder.of("retriever")
        llm_runs = recorder.of("llm")
        assert len(llm_runs) == 1  # UltRAG writes one query per question
        assert all(parent == retriever_run for _, _, parent in llm_runs)


def test_fifty_concurrent_abatch_questions_each_get_their_own_usage(kg):
    retriever = UltRAGRetriever.from_graph(kg, llm=QueryWriter(), linking="exact",
                                           executor="symbolic")
    # questions of different lengths: each one's prompt (and so its token count) differs
    questions = [f"Which films did Satoshi Kon direct? {'please ' * i}".strip()
                 for i in range(50)]
    expected = [retriever.invoke(q)[0].metadata["usage_prompt_tokens"] for q in questions]
    assert len(set(expected)) == 50
    batches = asyncio.run(retriever.abatch(questions, config={"max_concurrency": 50}))
    for question, docs, want in zip(questions, batches, expected):
        assert {d.metadata["question"] for d in docs} == {question}
        assert {d.metadata["usage_prompt_tokens"] for d in docs} == {want}
        assert {d.metadata["usage_calls"] for d in docs} == {1}
        assert json.loads(docs[0].metadata["retrieval"])["query"] == QUERY
    threaded = retriever.batch(questions[:10], config={"max_concurrency": 10})
    assert [b[0].metadata["usage_prompt_tokens"] for b in threaded] == expected[:10]


def test_answer_chain_invoke_batch_and_callbacks(kg):
    retriever = UltRAGRetriever.from_graph(kg, llm=QueryWriter(), linking="exact", k=2)
    chain = retriever.answer_chain()
    assert isinstance(chain, KGAnswerChain)
    recorder = RunRecorder()
    out = chain.invoke("Which Satoshi Kon film is about dreams?", config={"callbacks": [recorder]})
    assert out["answers"] == ["Paprika"] and out["answer"] == "Paprika"
    assert out["usage"]["calls"] == 2 and len(out["sources"]) == 2  # k caps the sources
    [(_, chain_run, _)] = recorder.of("chain")
    assert [parent for _, _, parent in recorder.of("llm")] == [chain_run, chain_run]
    assert [o["answers"] for o in chain.batch(["a?", {"question": "b?"}])] == [["Paprika"]] * 2
    assert asyncio.run(chain.ainvoke("c?"))["answers"] == ["Paprika"]
    # composes in LCEL: a lambda in front, one behind
    pipeline = RunnableLambda(lambda q: q.strip()) | chain | RunnableLambda(lambda o: o["answer"])
    assert pipeline.invoke("  Which Satoshi Kon film is about dreams?  ") == "Paprika"


def streaming_llm() -> GenericFakeChatModel:
    """LangChain's fake chat model streams a message word by word."""
    replies = [AIMessage(content=f"<query>{QUERY}</query>"),
               AIMessage(content="The one about dreams is <answers>Paprika</answers>")]
    return GenericFakeChatModel(messages=iter(replies))


def test_a_streamed_answer_arrives_in_pieces(kg):
    chain = UltRAGRetriever.from_graph(kg, llm=streaming_llm(), linking="exact").answer_chain()
    chunks = list(chain.stream("Which Satoshi Kon film is about dreams?"))
    deltas = [c["delta"] for c in chunks if "delta" in c]
    assert len(deltas) > 3  # the answer call's reply, piece by piece; the query call is not
    # the reply's text only: no <answers> tags (issue 29, item 8)
    assert "".join(deltas) == "The one about dreams is Paprika"
    assert chunks[-1]["answers"] == ["Paprika"]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total["delta"] == "".join(deltas) and total["answer"] == "Paprika"

    async def collect() -> list[dict]:
        achain = UltRAGRetriever.from_graph(kg, llm=streaming_llm(),
                                            linking="exact").answer_chain()
        return [c async for c in achain.astream("Which Satoshi Kon film is about dreams?")]

    achunks = asyncio.run(collect())
    assert [c["delta"] for c in achunks if "delta" in c] == deltas
    assert achunks[-1]["answers"] == ["Paprika"]


def test_tools_json_schemas_describe_their_arguments(kg):
    retriever = UltRAGRetriever.from_graph(kg, linking="exact", executor="symbolic")
    query_tool = retriever.as_query_tool()
    props = query_tool.args_schema.model_json_schema()["properties"]
    assert "_inv" in props["query"]["description"] and "AND(" in props["query"]["description"]
    assert "Paprika (1.000, proved)" in query_tool.invoke(
        {"query": 'AND("Satoshi Kon" -> directed_by_inv, "2006" -> release_year_inv)'})
    assert query_tool.invoke({"query": "AND("}).startswith("Error:")
    search = retriever.as_search_tool()
    assert search.args_schema.model_json_schema()["properties"]["query"]["description"]
    tools = {t.name: t for t in KGToolkit.from_graph(kg).get_tools()}
    path_args = tools["kg_follow_path"].args_schema.model_json_schema()["properties"]
    assert "' -> '" in path_args["path"]["description"] and "~" in path_args["path"]["description"]
    assert all(p.get("description") for t in tools.values()
               for p in t.args_schema.model_json_schema()["properties"].values())
    assert "Satoshi Kon" in tools["kg_follow_path"].invoke(
        {"entity": "Paprika", "path": "directed_by"})


def test_flat_metadata_round_trips(kg):
    docs = UltRAGRetriever.from_graph(kg, linking="exact").execute(QUERY)
    meta = docs[0].metadata
    assert all(isinstance(v, (str, int, float, bool, type(None))) for v in meta.values())
    assert unflatten(meta)["retrieval"]["query"] == QUERY


def _retrievers(kg):
    """A retriever of each LLM-using method, with LangChain fake chat models (no model load)."""
    from ketrag_fakes import HashingEmbedder
    from langchain_core.language_models import FakeListChatModel

    from langchain_kgrag import ByoKGRetriever, GraphRAFTRetriever, SimGRAGRetriever

    pattern = ('{"divided": ["films directed by Satoshi Kon"], '
               '"triples": [("UNKNOWN film 1", "directed_by", "Satoshi Kon")]}')
    linker = ("<entities>\nSatoshi Kon\n</entities>\n<paths>\ndirected_by\n</paths>\n"
              "<answers></answers>")
    emb = HashingEmbedder()
    return {
        "ultrag": lambda: UltRAGRetriever.from_graph(kg, llm=QueryWriter(), linking="exact",
                                                     executor="symbolic"),
        "simgrag": lambda: SimGRAGRetriever.from_graph(
            kg, llm=FakeListChatModel(responses=[pattern]), embedder=emb,
            humanize_relations=False),
        "byokg": lambda: ByoKGRetriever.from_graph(
            kg, llm=FakeListChatModel(responses=[linker]), embedder=emb, linking_mode="fuzzy",
            iterations=1, triplet_retrieval="scoring", text_top_k=0),
        "graphraft": lambda: GraphRAFTRetriever.from_graph(
            kg, llm=FakeListChatModel(responses=["Satoshi Kon", "1"]), embedder=emb),
    }


@pytest.mark.parametrize("name", ["ultrag", "simgrag", "byokg", "graphraft"])
def test_every_llm_call_of_every_retriever_nests_under_its_run(kg, name):
    for run in ("sync", "async"):
        retriever, recorder = _retrievers(kg)[name](), RunRecorder()
        config = {"callbacks": [recorder]}
        if run == "sync":
            docs = retriever.invoke("Which films did Satoshi Kon direct?", config=config)
        else:
            docs = asyncio.run(retriever.ainvoke("Which films did Satoshi Kon direct?",
                                                 config=config))
        [(_, retriever_run, _)] = recorder.of("retriever")
        llm_runs = recorder.of("llm")
        assert docs and llm_runs, (name, run)
        assert {parent for _, _, parent in llm_runs} == {retriever_run}, (name, run)
        assert docs[0].metadata["usage_calls"] == len(llm_runs), (name, run)


def test_search_tool_runs_nest_tool_retriever_llm(kg):
    class ToolRecorder(RunRecorder):
        def on_tool_start(self, serialized, input_str, *, run_id, parent_run_id=None, **kw):
            self.runs.append(("tool", run_id, parent_run_id))

    recorder = ToolRecorder()
    tool = UltRAGRetriever.from_graph(kg, llm=QueryWriter(), linking="exact",
                                      executor="symbolic").as_search_tool()
    out = tool.invoke({"query": "Which films did Satoshi Kon direct?"},
                      config={"callbacks": [recorder]})
    assert "Paprika (1.000)" in out
    [(_, tool_run, _)] = recorder.of("tool")
    [(_, retriever_run, retriever_parent)] = recorder.of("retriever")
    [(_, _, llm_parent)] = recorder.of("llm")
    assert (retriever_parent, llm_parent) == (tool_run, retriever_run)
