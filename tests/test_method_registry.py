"""The method registry and the constructor contract.

A toy method registered here -- and nowhere else -- gets the ``kgrag`` command line (``kgrag ask
--method``, ``kgrag eval --list``, and its own subcommand from one entry in
``kgrag.commands.COMMANDS``), ``kgrag eval``'s runner, a LangChain retriever with a search tool,
and a LlamaIndex retriever and query engine, without any other file of the project knowing
about it.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kgrag.commands import COMMANDS, Command
from kgrag.context.types import Answer, RetrievalResult, Usage
from kgrag.errors import KgragError
from kgrag.graph import read_triples
from kgrag.methods.base import KGMethod
from kgrag.methods.config import MethodConfig
from kgrag.methods.registry import (
    METHODS,
    MethodSpec,
    WrittenInput,
    get_method,
    method_names,
    register_method,
)

MOVIES = Path(__file__).resolve().parents[1] / "shared" / "kgrag" / "data" / "movies.tsv"


@dataclass(frozen=True)
class NeighbourConfig(MethodConfig):
    """The toy's one knob: ``top_k`` edges returned (``kgrag ask --top`` sets it)."""

    label: ClassVar[str] = "toyhop"

    top_k: int = 5


class NeighbourMethod(KGMethod):
    """Toy method: the edges of every graph node named in the question (no LLM needed);
    with an LLM, ``answer`` asks it once."""

    name = "toyhop"
    config_class = NeighbourConfig

    def __init__(self, graph: Any, *, llm: Any = None, embedder: Any = None,
                 config: NeighbourConfig | None = None, **params: Any) -> None:
        self.graph, self.llm, self.embedder = graph, llm, embedder
        self.configure(config, params)

    def retrieve(self, question: str) -> RetrievalResult:
        named = [n for n in self.graph.iter_node_names() if n in question]
        triples = self.graph.one_hop(named, limit=self.config.top_k)
        return RetrievalResult(question=question, method=self.name, items=list(triples),
                               metadata={"answer_candidates": [t.tail for t in triples]})

    def answer(self, question: str) -> Answer:
        retrieval = self.retrieve(question)
        text = self.llm(f"Q: {question}\n{retrieval.context}")
        return Answer(question=question, answers=[text], text=text, retrieval=retrieval,
                      usage=Usage(calls=1))


TOY_COMMAND = "kgrag_toyhop_command"


@pytest.fixture
def toy(monkeypatch):
    """Register the toy method (and its command module) for one test."""
    import sys
    import types

    module = types.ModuleType(TOY_COMMAND)

    def register(subparsers: Any) -> None:
        from kgrag.commands.common import add_graph_arguments, graph_from_args

        parser = subparsers.add_parser("toyhop", help="the toy method")
        add_graph_arguments(parser)
        parser.add_argument("question")

        def run(args: Any) -> int:
            result = NeighbourMethod.from_graph(graph_from_args(args)).retrieve(args.question)
            for item in result.items:
                print(item.verbalize())
            return 0
        parser.set_defaults(func=run)

    module.register = register
    monkeypatch.setitem(sys.modules, TOY_COMMAND, module)
    monkeypatch.setattr("kgrag.commands.COMMANDS",
                        [*COMMANDS, Command("toyhop", TOY_COMMAND)])
    monkeypatch.setattr("kgrag.methods.registry.METHODS", dict(METHODS))
    spec = register_method(MethodSpec(
        name="toyhop", cls=NeighbourMethod, tool_name="toy_neighbours",
        tool_description="Edges of the entities a question names."))
    return spec


@pytest.fixture(scope="module")
def kg():
    return read_triples(MOVIES)


QUESTION = "Who directed Tokyo Godfathers?"


def test_registry_lists_the_five_methods():
    assert method_names() == ["byokg", "simgrag", "ultrag", "graphraft", "ketrag"]
    assert method_names("documents") == ["ketrag"]
    for name in method_names():
        spec = get_method(name)
        assert spec.method_class().name == name
        assert callable(spec.method_class().from_graph)
    with pytest.raises(KeyError, match="registered: byokg"):
        get_method("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_method(MethodSpec(name="simgrag", cls=NeighbourMethod))


def test_toy_method_gets_the_command_line(toy, kg, capsys):
    from kgrag.cli import main

    assert main(["toyhop", str(MOVIES), QUESTION]) == 0
    assert "Tokyo Godfathers -> directed_by -> Satoshi Kon" in capsys.readouterr().out
    assert main(["ask", str(MOVIES), QUESTION, "--method", "toyhop", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "method: toyhop  items: 1" in out
    assert main(["eval", "--list"]) == 0
    assert any(line.startswith("toyhop") and "llm-free" in line
               for line in capsys.readouterr().out.splitlines())


class NamesMethod(NeighbourMethod):
    """Toy method whose "LLM" would write the list of graph names to expand: a user may give it
    by hand (``kgrag ask --names``), as SimGRAG's pattern and UltRAG's query."""

    name = "toynames"

    def retrieve_names(self, names: list[str], question: str) -> RetrievalResult:
        triples = self.graph.one_hop(names, limit=self.config.top_k)
        return RetrievalResult(question=question, method=self.name, items=list(triples))


def parse_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise KgragError(f"no names in {text!r}")
    return names


@pytest.fixture
def toy_with_written_input(monkeypatch):
    """Register NamesMethod, whose registry entry says how a user writes its input."""
    import sys
    import types

    module = types.ModuleType("kgrag_toy_written_input")
    module.parse_names = parse_names
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr("kgrag.methods.registry.METHODS", dict(METHODS))
    return register_method(MethodSpec(
        name="toynames", cls=NamesMethod, written_input=WrittenInput(
            option="names", owner="ToyNames", kind="name list",
            help="graph names to expand, comma-separated", sketch="Name 1, Name 2",
            parse=f"{module.__name__}:parse_names", retrieve="retrieve_names",
            from_fact=lambda head, relation: head)))


def test_a_written_input_gets_its_ask_option_errors_and_demo_step(toy_with_written_input, kg,
                                                                  capsys):
    """``kgrag ask`` and the demo name no method: a new method's written input (its registry
    entry's ``written_input``) gets its option, its errors and its demo step."""
    from kgrag.cli import main
    from kgrag.commands import demo

    assert main(["ask", str(MOVIES), "Who directed it?", "--method", "toynames",
                 "--names", "Paprika"]) == 0
    out = capsys.readouterr().out
    assert "method: toynames" in out and "Paprika -> directed_by -> Satoshi Kon" in out
    assert main(["ask", str(MOVIES), "q", "--method", "toynames"]) == 2
    assert capsys.readouterr().err == (
        "kgrag ask: error: ToyNames needs a name list: pass --names 'Name 1, Name 2' or an LLM "
        "with --llm module:factory\n")
    assert main(["ask", str(MOVIES), "q", "--method", "byokg", "--names", "Paprika"]) == 2
    assert capsys.readouterr().err == ("kgrag ask: error: --names is ToyNames's name list: use "
                                       "it with --method toynames\n")
    assert main(["ask", "no-such-graph.tsv", "q", "--method", "toynames", "--names", " , "]) == 2
    assert capsys.readouterr().err == "kgrag ask: error: no names in ' , '\n"  # before the graph
    ctx = demo.DemoContext(kg=kg, data_path=MOVIES, out=print)
    ctx.state.update(sample=demo.sample_of(kg), question="What is it?")
    demo._generic_method_step(toy_with_written_input).run(ctx)
    head = ctx.state["sample"].head
    shown = capsys.readouterr().out.splitlines()
    assert shown[0] == f"What is it? with the names {head}:"
    assert head in shown[1]  # an edge of the sample fact's head


def test_toy_method_gets_eval(toy, kg, tmp_path):
    from kgrag.eval.harness import build_question_runner
    from kgrag.eval.runner import METHOD_DATASETS, METHOD_KINDS, evaluate
    from kgrag.questions import QAExample

    assert METHOD_KINDS["toyhop"] == "kg" and "llm-free" in METHOD_DATASETS["toyhop"][1]
    run = build_question_runner("toyhop", "llm-free", kg)
    outcome = run(QAExample(QUESTION, ("Satoshi Kon",)), QUESTION)
    assert "Satoshi Kon" in outcome.ranked and "Satoshi Kon" in outcome.context_names
    with pytest.raises(ValueError, match="no oracle mode"):
        build_question_runner("toyhop", "oracle", kg)
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": QUESTION, "answers": ["Satoshi Kon"]}) + "\n")
    from kgrag.eval.runner import user_dataset

    summary = evaluate("toyhop", user_dataset(questions, graph=str(MOVIES)), mode="llm-free",
                       out_dir=tmp_path / "out", progress=False)
    assert summary["evaluated"] == 1 and summary["metrics"]["hits@10"] == 100.0


def test_toy_method_gets_langchain_wrappers(toy, kg):
    pytest.importorskip("langchain_core")
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import BaseTool

    from langchain_kgrag import retriever_for

    cls = retriever_for("toyhop")
    assert issubclass(cls, BaseRetriever) and cls.__name__ == "NeighbourMethodRetriever"
    retriever = cls.from_graph(kg, top_k=2, k=1)  # the method's count, the retriever's cap
    assert retriever.method.config.top_k == 2 and retriever.k == 1
    docs = retriever.invoke(QUESTION)
    assert len(docs) == 1 and docs[0].metadata["method"] == "toyhop"
    tool = retriever.as_search_tool()
    assert isinstance(tool, BaseTool) and tool.name == "toy_neighbours"
    assert "Satoshi Kon" in tool.invoke({"query": QUESTION})


def test_toy_method_gets_llama_index_wrappers(toy, kg):
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.tools import QueryEngineTool, RetrieverTool

    from llama_index_kgrag import query_engine_for, retriever_for

    retriever = retriever_for("toyhop").from_graph(kg)
    assert isinstance(retriever, BaseRetriever)
    nodes = retriever.retrieve(QUESTION)
    assert any("Satoshi Kon" in n.node.get_content() for n in nodes)
    tool = retriever.as_tool()
    assert isinstance(tool, RetrieverTool) and tool.metadata.name == "toy_neighbours"
    engine = query_engine_for("toyhop").from_graph(kg, llm=lambda prompt: "Satoshi Kon")
    response = engine.query(QUESTION)
    assert str(response) == "Satoshi Kon" and response.source_nodes
    assert isinstance(engine.as_tool(), QueryEngineTool)


def test_constructor_contract_keyword_only(kg):
    from kgrag.methods.byokg import ByoKGRAG
    from kgrag.methods.ultrag import UltRAG

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        method = UltRAG.from_graph(kg, llm=None, linking="exact")
    assert method.llm is None

    def fake_llm(prompt: str) -> str:
        return "x"

    for build in (lambda: UltRAG(kg, fake_llm, linking="exact"),
                  lambda: UltRAG.from_graph(kg, fake_llm, linking="exact"),
                  lambda: ByoKGRAG(kg, fake_llm)):
        with pytest.raises(TypeError, match="positional"):
            build()
    from kgrag.methods.ketrag import KETRAG

    with pytest.raises(TypeError, match="from_documents"):
        KETRAG.from_graph(kg)
    with pytest.raises(TypeError, match="from_graph"):
        NeighbourMethod.from_documents(["text"])


def test_adapter_factories_take_llm_by_keyword_only(kg):
    pytest.importorskip("langchain_core")
    from langchain_kgrag import UltRAGRetriever

    with pytest.raises(TypeError, match="positional"):
        UltRAGRetriever.from_graph(kg, lambda p: "x", linking="exact")
    retriever = UltRAGRetriever.from_graph(kg, llm=lambda p: "x", linking="exact")
    assert retriever.method.llm is not None and retriever.k == 10
    assert retriever.tool_name == get_method("ultrag").tool_name


def test_every_method_signature_follows_the_contract():
    import inspect

    for name in method_names():
        cls = get_method(name).method_class()
        factory = cls.from_graph if get_method(name).builds_from == "graph" else cls.from_documents
        params = inspect.signature(factory).parameters
        assert params["llm"].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params["embedder"].kind is inspect.Parameter.KEYWORD_ONLY, name
        init = inspect.signature(cls.__init__).parameters
        for keyword in ("llm", "embedder"):
            assert init[keyword].kind is inspect.Parameter.KEYWORD_ONLY, (name, keyword)


def test_store_protocols_decide_what_a_method_does(kg):
    """ByoKG's query step needs only a CypherRunner; GraphRAFT's database backend needs the
    whole CypherStore (mapping, bulk lookups), any other store gets its one_hop backend; the
    in-memory graph is neither."""
    from byokg_fixtures import DelegatingStore

    from kgrag.graph.base import CypherRunner, CypherStore, is_cypher_store, runs_cypher
    from kgrag.methods.byokg.query import execute_query
    from kgrag.methods.graphraft.backend import (
        CypherBackend,
        MemoryBackend,
        StoreBackend,
        as_backend,
    )

    runner = DelegatingStore(kg, cypher_rows=[[{"n": 1}]])
    assert runs_cypher(runner) and isinstance(runner, CypherRunner)
    assert not is_cypher_store(runner) and not isinstance(runner, CypherStore)
    assert execute_query(runner, "MATCH (n) RETURN count(n) AS n").rows == [{"n": 1}]
    no_cypher = DelegatingStore(kg)  # supports_cypher False
    assert not runs_cypher(no_cypher)
    assert "cannot run openCypher" in execute_query(no_cypher, "MATCH (n) RETURN n").error
    with pytest.raises(TypeError, match="not a Cypher database store"):
        CypherBackend(runner)  # type: ignore[arg-type]
    assert isinstance(as_backend(runner), StoreBackend)  # runs Cypher, but no CypherStore
    assert isinstance(as_backend(kg), MemoryBackend) and as_backend(kg).graph is kg


def test_byokg_config_and_keywords_are_the_same_method(kg):
    from kgrag.methods.byokg import ByoKGConfig, ByoKGRAG

    by_keywords = ByoKGRAG(kg, link_top_k=5, iterations=3, linking_mode="fuzzy")
    by_config = ByoKGRAG(kg, config=ByoKGConfig(link_top_k=5, iterations=3, linking_mode="fuzzy"))
    assert by_keywords.config == by_config.config
    assert (by_keywords.config.link_top_k, by_keywords.config.iterations) == (5, 3)
    mixed = ByoKGRAG(kg, config=ByoKGConfig(link_top_k=5), iterations=4)
    assert (mixed.config.link_top_k, mixed.config.iterations) == (5, 4)
    assert not hasattr(mixed, "iterations")  # one place for a knob: the config
    with pytest.raises(TypeError, match="unknown ByoKG-RAG parameter.*top_mm"):
        ByoKGRAG(kg, top_mm=5)
    with pytest.raises(ValueError, match="triplet_retrieval"):
        ByoKGRAG(kg, triplet_retrieval="nope")
    question = "Who directed Tokyo Godfathers?"
    assert ([i.verbalize() for i in by_keywords.retrieve(question).items]
            == [i.verbalize() for i in by_config.retrieve(question).items])


def test_ultrag_config_and_keywords_are_the_same_method(kg):
    from kgrag.methods.ultrag import UltRAG
    from kgrag.methods.ultrag.config import UltRAGConfig

    by_keywords = UltRAG(kg, linking="exact", top_k=7, executor="symbolic")
    by_config = UltRAG(kg, config=UltRAGConfig(linking="exact", top_k=7), executor="symbolic")
    assert by_keywords.config == by_config.config and by_keywords.config.top_k == 7
    assert not hasattr(by_keywords, "top_k")
    query = '"Satoshi Kon" -> directed_by_inv'
    assert ([e.name for e in by_keywords.retrieve_query(query).items]
            == [e.name for e in by_config.retrieve_query(query).items])
    with pytest.raises(TypeError, match="unknown UltRAG parameter.*topk"):
        UltRAG(kg, topk=3)
    with pytest.raises(ValueError, match="linking must be one of"):
        UltRAG(kg, linking="nope")
