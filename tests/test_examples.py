"""Smoke tests of the runnable examples in ``examples/``: each one runs in-process (``runpy``)
against the bundled movie graph, and the tests check the real retrieval output it prints and
returns (the scripted stand-in LLMs only write queries, patterns, tool calls and answers).

The packaged MiniLM is loaded once (``minilm`` fixture) and wrapped in an on-disk
``CachedEmbedder``, so the node-name embeddings several examples compute for the same graph
are computed once.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def load(name: str) -> dict:
    """The namespace of ``examples/<name>.py`` (run as a module, not as ``__main__``)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name=f"example_{name}")


@pytest.fixture(scope="module")
def embedder(minilm, tmp_path_factory):
    from kgrag.embed import CachedEmbedder

    return CachedEmbedder(minilm, tmp_path_factory.mktemp("emb-cache"), min_texts=20)


def test_lcel_chain_feeds_the_retrieved_entities_to_the_chat_model(capsys):
    out = load("langchain_lcel_chain")["main"]()
    assert sorted(out["entities"]) == ["Hayao Miyazaki", "Satoshi Kon"]
    assert "Satoshi Kon (1.000)" in out["answer_prompt"]
    assert "Question: Who directed the Japanese animated films?" in out["answer_prompt"]
    assert out["answer"] == "Satoshi Kon and Hayao Miyazaki directed them."
    assert "UltRAG query: AND(" in capsys.readouterr().out


def test_ensemble_fuses_simgrag_and_graphraft(embedder):
    docs = load("langchain_ensemble")["main"](embedder=embedder)
    texts = [d.page_content for d in docs]
    assert texts[0] == ("(Tokyo Godfathers, directed_by, Satoshi Kon) "
                        "(Tokyo Godfathers, set_in, Tokyo)")
    assert {d.metadata["method"] for d in docs} == {"simgrag", "graphraft"}
    graphraft = [d.page_content for d in docs if d.metadata["method"] == "graphraft"]
    assert graphraft[0].startswith("Tokyo Godfathers")


def test_langgraph_agent_runs_the_graph_tools():
    from langchain_core.messages import AIMessage, ToolMessage

    messages = load("langchain_agent")["main"]()
    tool_results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.name for m in tool_results] == ["kg_lookup_entity", "kg_follow_path"]
    assert tool_results[0].content.startswith("Tokyo Godfathers (score 1.00, exact)")
    assert tool_results[1].content == ("Tokyo Godfathers -> directed_by -> Satoshi Kon -> "
                                       "born_in -> Sapporo")
    assert isinstance(messages[-1], AIMessage) and "Sapporo" in messages[-1].content


def test_a_llamaindex_query_engine_per_method(embedder):
    responses = load("llamaindex_query_engines")["main"](embedder=embedder)
    got = {name: (r.metadata["answers"], r.metadata["usage"]["calls"])
           for name, r in responses.items()}
    assert got == {
        "ByoKG-RAG": (["Sapporo"], 3),
        "SimGRAG": (["Perfect Blue"], 2),
        "UltRAG": (["Satoshi Kon", "Hayao Miyazaki"], 2),
        "GraphRAFT": (["Tokyo Godfathers"], 1),
        "KET-RAG": (["Sapporo"], 1),
    }
    sources = {name: [n.node.get_content() for n in r.source_nodes]
               for name, r in responses.items()}
    assert ("Tokyo Godfathers -> directed_by -> Satoshi Kon -> born_in -> Sapporo"
            in sources["ByoKG-RAG"])
    assert sources["SimGRAG"][0] == ("(Perfect Blue, directed_by, Satoshi Kon) "
                                     "(Perfect Blue, has_genre, Thriller)")
    assert sources["GraphRAFT"][0].startswith("Tokyo Godfathers")
    assert any("born in Sapporo" in text for text in sources["KET-RAG"])


def test_llamaindex_react_agent_with_a_retriever_tool(embedder):
    out = load("llamaindex_agent")["main"](embedder=embedder)
    assert set(out["tool_outputs"]) == {"movie_graph_search", "kg_follow_path"}
    assert "Sapporo" in out["tool_outputs"]["movie_graph_search"]
    assert out["tool_outputs"]["kg_follow_path"] == (
        "Tokyo Godfathers -> directed_by -> Satoshi Kon -> born_in -> Sapporo")
    assert "born in Sapporo" in out["answer"]


def test_router_picks_an_engine_per_question(embedder):
    ns = load("llamaindex_router")
    routed = ns["main"](embedder=embedder)
    index, response = routed[ns["SET_QUESTION"]]
    assert index == 0 and sorted(n.node.get_content() for n in response.source_nodes) == [
        "Hayao Miyazaki (1.000)", "Satoshi Kon (1.000)"]
    index, response = routed[ns["FACT_QUESTION"]]
    assert index == 1 and response.source_nodes[0].node.get_content().startswith(
        "(Perfect Blue, directed_by, Satoshi Kon)")


@pytest.mark.server
def test_neo4j_example_on_an_existing_bolt_graph(falkordb_server):
    from kgrag.graph.cypher.falkordb import FalkorDBGraphStore

    label = "KgragExampleMovie"
    # FalkorDB's Bolt port reads graph key "falkordb"; load it over the Redis protocol first
    # (its Bolt splices parameters, so "Palme d'Or" cannot be written over Bolt)
    store = FalkorDBGraphStore.from_url("127.0.0.1", falkordb_server.port, graph="falkordb",
                                        node_label=label)
    store._write(f"MATCH (n:{label}) DETACH DELETE n")
    store.load_triples(str(EXAMPLES / "data" / "movies.tsv"), progress=False)
    try:
        out = load("neo4j_existing_graph")["main"](
            ["--uri", falkordb_server.bolt_uri, "--username", "", "--password", "",
             "--node-label", label])
    finally:
        store._write(f"MATCH (n:{label}) DETACH DELETE n")
        store.close()
    assert out["nodes"] == 198
    assert sorted(out["entities"]) == ["Hayao Miyazaki (1.000)", "Satoshi Kon (1.000)"]
    assert out["path"] == "Tokyo Godfathers -> directed_by -> Satoshi Kon -> born_in -> Sapporo"
    assert ('[{"film": "Millennium Actress"}, {"film": "Paprika"}, {"film": "Perfect Blue"}, '
            '{"film": "Tokyo Godfathers"}]') in out["cypher"]
    assert "refused Cypher" in out["refused"]


def test_byo_csv_of_triples(embedder, tmp_path):
    ns = load("byo_csv_triples")
    out = ns["main"]([], embedder=embedder)
    assert (out["graph"].num_nodes, out["graph"].num_edges) == (12, 12)
    assert out["result"].metadata["entities"] == ["Ada Lovelace"]
    assert out["result"].metadata["answer_candidates"][0] == "Lisbon"
    assert out["result"].usage.calls == 0
    # a file of the user's own, with a quoted separator inside a field
    own = tmp_path / "own.csv"
    own.write_text('a,r,"b, c"\n"b, c",s,d\n', encoding="utf-8")
    again = ns["main"]([str(own), "What does a r?"], embedder=embedder)
    assert "b, c" in again["graph"].node_index


def test_byo_folder_of_documents_with_ketrag(embedder):
    out = load("byo_documents_ketrag")["main"]([], embedder=embedder)
    texts = [d.page_content for d in out["docs"]]
    assert any("born in Tallinn" in t for t in texts)
    assert {d.metadata["source"] for d in out["docs"]} <= {
        "harbour.txt", "people/ilves.md", "town.txt"}
    assert out["answer"].answers == ["Tallinn"] and out["answer"].usage.calls == 1


def test_visualize_example_writes_html_and_png(embedder, tmp_path):
    written = load("visualize_retrieval")["main"](str(tmp_path / "views"), embedder=embedder)
    assert sorted(p.name for p in written) == ["simgrag.html", "simgrag.png", "ultrag.html",
                                               "ultrag.png"]
    html = (tmp_path / "views" / "simgrag.html").read_text(encoding="utf-8")
    assert "Perfect Blue" in html and "Thriller" in html
    assert (tmp_path / "views" / "ultrag.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_framework_graphs_load_and_trace_back_to_their_text(embedder):
    out = load("byo_framework_graphs")["main"](embedder=embedder)
    for name in ("llama_index", "langchain"):
        assert out[name]["triples"] == [("Paprika", "DIRECTED_BY", "Satoshi Kon"),
                                        ("Satoshi Kon", "BORN_IN", "Sapporo")]
    assert out["llama_index"]["sources"] == [
        "Paprika (2006) was directed by Satoshi Kon, who was born in Sapporo."]
    assert out["langchain"]["sources"] == ["Paprika was directed by Satoshi Kon, born in Sapporo."]
    assert out["llama_index"]["types"]["PERSON"] == ["Satoshi Kon"]
    assert out["langchain"]["types"]["City"] == ["Sapporo"]


def test_langchain_tracing_streaming_and_prompt_override(capsys):
    out = load("langchain_tracing_streaming")["main"]()
    assert out["trace"] == ["retriever UltRAGRetriever", "  chat model"]  # the LLM run nested
    assert {d.metadata["usage_calls"] for d in out["docs"]} == {1}
    assert len(out["pieces"]) > 3 and out["final"]["answers"] == ["Satoshi Kon", "Hayao Miyazaki"]
    assert out["answer_prompt"].startswith("[system] You are a film expert.")
    assert "2. Q29 | Hayao Miyazaki | 1.000" in out["answer_prompt"]
    assert "retriever UltRAGRetriever\n    chat model" in capsys.readouterr().out


def test_llamaindex_settings_streaming_prompts_and_events():
    from llama_index.core import Settings

    before = Settings._llm
    out = load("llamaindex_settings_streaming")["main"]()
    assert Settings._llm is before  # the example restores the global Settings
    assert len(out["pieces"]) > 3 and out["metadata"]["answers"] == ["Satoshi Kon",
                                                                      "Hayao Miyazaki"]
    assert "Ranked candidates:\n1. Q1 | Satoshi Kon" in out["answer_prompt"]  # update_prompts
    names = out["events"]
    assert names.index("RetrievalStartEvent") < names.index("RetrievalEndEvent")
    assert "LLMCompletionInProgressEvent" in names  # the answer streamed


def test_llamaindex_property_graph_sub_retrievers(capsys):
    out = load("llamaindex_property_graph")["main"]()
    by_method = {}
    for node in out["nodes"]:
        by_method.setdefault(node.node.metadata.get("method", "llama_index"), []).append(
            node.node.get_content())
    assert "Bob -> REPORTS_TO -> Alice" in by_method["llama_index"]
    assert by_method["simgrag"] == ["(Bob, REPORTS_TO, Alice)"]
    assert by_method["graphraft"][0] == "Alice"
    assert "Question: Who does Bob report to?" in capsys.readouterr().out
