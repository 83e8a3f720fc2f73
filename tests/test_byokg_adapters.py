"""ByoKG-RAG through LangChain and LlamaIndex: retrievers, query engine, tools, toolkits."""

from __future__ import annotations

import asyncio

import pytest
from byokg_fixtures import WORLD_SERIES, DelegatingStore, world_graph
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from llama_index.core.base.base_retriever import BaseRetriever as LIBaseRetriever
from llama_index.core.tools import QueryEngineTool
from llm_fakes import ScriptedLlamaLLM

from kgrag.methods.byokg import ByoKGRAG
from langchain_kgrag.byokg import ByoKGRetriever as LCByoKGRetriever
from langchain_kgrag.byokg import KGToolkit
from llama_index_kgrag.byokg import ByoKGQueryEngine, graph_tools
from llama_index_kgrag.byokg import ByoKGRetriever as LIByoKGRetriever

KASTEN_SCRIPT = [
    "<entities>\nStan Kasten\n</entities>\n<paths>\nbusiness.board_member.leader_of -> "
    "organization.leadership.organization -> sports.sports_team.championships\n</paths>",
    "<selected>business.board_member.leader_of</selected>",
    "<next-entities>FINISH</next-entities>",
    "<entities>FINISH</entities>",
    "<answers>\n1959 World Series\n1963 World Series\n1965 World Series\n1981 World Series\n"
    "1988 World Series\n</answers>",
]
USAGE = {"prompt_tokens": 50, "completion_tokens": 5}
KASTEN_Q = "In what years did Stan Kasten's organization win the World Series?"


@pytest.fixture(scope="module")
def kg():
    return world_graph()


@pytest.fixture(scope="module")
def parts(kg, minilm):
    method = ByoKGRAG(kg, embedder=minilm)
    return {"linker": method.linker, "scorer": method.scorer}


# ---------------------------------------------------------------- LangChain
def test_langchain_retriever_sync_async_and_usage(kg, parts):
    retriever = LCByoKGRetriever.from_graph(kg, llm=FakeListChatModel(responses=KASTEN_SCRIPT[:4]),
                                            **parts)
    assert isinstance(retriever, LCBaseRetriever)
    docs = retriever.invoke(KASTEN_Q)
    assert all(isinstance(d, Document) for d in docs)
    texts = "\n".join(d.page_content for d in docs)
    for year in WORLD_SERIES:
        assert year in texts  # the 3-step metapath reached every championship
    path_docs = [d for d in docs if d.metadata["kgrag_type"] == "path"]
    assert path_docs and path_docs[0].metadata["method"] == "byokg"
    assert {d.metadata["usage_calls"] for d in docs} == {4}  # the question's cost, per document
    again = LCByoKGRetriever.from_graph(kg, llm=FakeListChatModel(responses=KASTEN_SCRIPT[:4]),
                                        **parts)
    adocs = asyncio.run(again.ainvoke(KASTEN_Q))
    assert [d.page_content for d in adocs] == [d.page_content for d in docs]


def test_langchain_batch_and_tool_in_llm_free_mode(kg, parts):
    retriever = LCByoKGRetriever.from_graph(kg, **parts)
    batches = retriever.batch(["What language is spoken in Jamaica?",
                               "Who is the president of USA?"])
    assert len(batches) == 2
    assert batches[0][0].page_content.startswith("English")      # top answer candidate
    assert "Joe Biden" in batches[1][0].page_content
    tool = retriever.as_search_tool()
    assert tool.name == "byokg_graph_search"
    out = tool.invoke({"query": "What language is spoken in Jamaica?"})
    assert "Jamaica -> language_spoken -> English" in out


def test_langchain_answer_via_retriever(kg, parts):
    retriever = LCByoKGRetriever.from_graph(kg, llm=FakeListChatModel(responses=KASTEN_SCRIPT),
                                            **parts)
    answer = retriever.answer(KASTEN_Q)
    assert set(answer.answers) == WORLD_SERIES and answer.usage.calls == 5


def test_langchain_toolkit(kg, parts):
    toolkit = KGToolkit.from_graph(kg, linker=parts["linker"])
    tools = {t.name: t for t in toolkit.get_tools()}
    assert set(tools) == {"kg_lookup_entity", "kg_neighbors", "kg_follow_path", "kg_shortest_path"}
    looked_up = tools["kg_lookup_entity"].invoke({"name": "Jamaican people"})
    assert looked_up.splitlines()[0].startswith("Jamaica")
    assert "English -> countries_spoken_in -> USA | England" in tools["kg_neighbors"].invoke(
        {"entity": "English", "relation": "countries_spoken_in"})
    assert tools["kg_follow_path"].invoke(
        {"entity": "Stan Kasten",
         "path": "business.board_member.leader_of -> organization.leadership.organization"}
    ).endswith("Los Angeles Dodgers")
    assert "English" in tools["kg_shortest_path"].invoke({"source": "Jamaica", "target": "USA"})
    store = DelegatingStore(kg, cypher_rows=[[{"n": 13}]])
    cypher_tools = {t.name: t for t in KGToolkit.from_graph(store,
                                                            linker=parts["linker"]).get_tools()}
    assert '"n": 13' in cypher_tools["kg_cypher"].invoke(
        {"query": "MATCH (n) RETURN count(n) AS n"})
    assert "refused" in cypher_tools["kg_cypher"].invoke({"query": "MATCH (n) DETACH DELETE n"})
    assert store.queries == ["MATCH (n) RETURN count(n) AS n"]
    from_retriever = LCByoKGRetriever.from_graph(kg, **parts).toolkit()
    assert len(from_retriever.get_tools()) == 4


# ---------------------------------------------------------------- LlamaIndex
def test_llamaindex_query_engine_answers_with_sources(kg, parts):
    llm = ScriptedLlamaLLM(replies=list(KASTEN_SCRIPT), prompts=[], usage=USAGE)
    engine = ByoKGQueryEngine.from_graph(kg, llm=llm, **parts)
    response = engine.query(KASTEN_Q)
    assert set(response.metadata["answers"]) == WORLD_SERIES
    assert response.metadata["usage"] == {"calls": 5, "prompt_tokens": 250, "completion_tokens": 25,
                                          "total_tokens": 275}
    sources = "\n".join(n.node.get_content() for n in response.source_nodes)
    assert all(year in sources for year in WORLD_SERIES)
    assert all(year in llm.prompts[-1] for year in WORLD_SERIES)  # final call sees the context
    tool = QueryEngineTool.from_defaults(
        ByoKGQueryEngine.from_graph(kg, llm=ScriptedLlamaLLM(replies=list(KASTEN_SCRIPT),
                                                             prompts=[], usage=USAGE),
                                    **parts),
        name="byokg", description="Answer questions from the knowledge graph.")
    assert "1988 World Series" in str(tool.call(KASTEN_Q))
    async_engine = ByoKGQueryEngine.from_graph(
        kg, llm=ScriptedLlamaLLM(replies=list(KASTEN_SCRIPT), prompts=[], usage=USAGE), **parts)
    async_response = asyncio.run(async_engine.aquery(KASTEN_Q))
    assert set(async_response.metadata["answers"]) == WORLD_SERIES
    assert async_response.metadata["usage"]["calls"] == 5


def test_llamaindex_retriever_sync_and_async(kg, parts):
    retriever = LIByoKGRetriever.from_graph(
        kg, llm=ScriptedLlamaLLM(replies=list(KASTEN_SCRIPT[:4]), prompts=[], usage=USAGE), **parts)
    assert isinstance(retriever, LIBaseRetriever)
    nodes = retriever.retrieve(KASTEN_Q)
    assert any("Los Angeles Dodgers" in n.node.get_content() for n in nodes)
    llm_free = LIByoKGRetriever.from_graph(kg, **parts)
    nodes = asyncio.run(llm_free.aretrieve("What language is spoken in Jamaica?"))
    assert nodes[0].node.get_content().startswith("English") and nodes[0].score is not None


def test_llamaindex_function_tools(kg, parts):
    method = ByoKGRAG(kg, **parts)
    tools = {t.metadata.name: t for t in graph_tools(method)}
    assert "kg_cypher" not in tools
    out = tools["kg_neighbors"].call(entity="Jamaica", relation="capital")
    assert "Jamaica -> capital -> Kingston" in str(out)
    store_tools = {t.metadata.name: t for t in graph_tools(DelegatingStore(kg, cypher_rows=[]),
                                                          linker=parts["linker"])}
    assert "refused" in str(store_tools["kg_cypher"].call(query="CREATE (n)"))


def test_langchain_batch_with_llm_runs_questions_concurrently(kg, parts):
    """Concurrent questions share one method; each gets its own context and exact call count."""
    import re

    def linker_llm(prompt: str) -> str:  # answers by reading the prompt, so order does not matter
        question = re.findall(r"^Question: (.*)$", prompt, re.MULTILINE)
        if "Given a question, the graph schema" in prompt:
            if "Graph context:\n(none yet" not in prompt:
                return "<entities>FINISH</entities>"
            entity = "Jamaica" if "Jamaica" in question[-1] else "USA"
            path = "capital" if entity == "Jamaica" else "president"
            return f"<entities>{entity}</entities><paths>{path}</paths>"
        if "Choose the relations" in prompt:
            asked = re.findall(r"<question>(.*?)</question>", prompt)[-1]
            return ("<selected>capital</selected>" if "capital" in asked
                    else "<selected>president</selected>")
        return "<next-entities>FINISH</next-entities>"

    retriever = LCByoKGRetriever.from_graph(kg, llm=linker_llm, text_top_k=0, **parts)
    capital, president = retriever.batch(["What is the capital of Jamaica?",
                                          "Who is the president of the USA?"],
                                         config={"max_concurrency": 2})
    assert capital[0].page_content == "Jamaica -> capital -> Kingston"
    assert president[0].page_content == "USA -> president -> Joe Biden"
    assert retriever.method.total_usage.calls == 8  # 2 x (2 KG-Linker + 2 agentic)
