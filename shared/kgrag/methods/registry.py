"""The method registry: every place that lists methods reads it.

One :class:`MethodSpec` per method says what the rest of kgrag needs to know about it: the class
(by dotted path, imported on first use so ``import kgrag`` stays light), whether it is built
from a graph or from documents, the input its LLM writes that a user may write instead
(:class:`WrittenInput`), the name and description of the search tool the adapters make from
it, and how ``kgrag eval`` runs it. ``kgrag ask``, ``kgrag demo``, ``kgrag eval``, and both
adapter packages (``langchain_kgrag.retriever_for`` / ``llama_index_kgrag.retriever_for``) read
it; adding a method is one folder under ``kgrag/methods/`` plus one :func:`register_method`
call (see CONTRIBUTING.md). A method's own ``kgrag <name>`` command is listed with the other
commands, in :data:`kgrag.commands.COMMANDS`.

>>> spec = get_method("simgrag")
>>> spec.method_class().__name__, spec.builds_from
('SimGRAG', 'graph')
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

from kgrag.errors import UnknownMethodError

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.methods.base import KGMethod

__all__ = ["METHODS", "MethodSpec", "WrittenInput", "get_method", "method_names",
           "register_method", "unregister_method"]

#: The dataset families ``kgrag eval`` knows: knowledge-graph QA and text QA.
KG_DATASETS = ("metaqa-1hop", "metaqa-2hop", "metaqa-3hop", "pq-2h", "pq-3h")
TEXT_DATASETS = ("musique", "hotpotqa")
#: a search tool's description when the method's entry gives none
DEFAULT_TOOL_DESCRIPTION = (
    "Search the knowledge graph for facts relevant to a natural-language question. "
    "Input: the question. Output: retrieved facts, one per line.")
#: what both adapters' search tools say of their one argument, the question
TOOL_QUESTION_DESCRIPTION = ("The question to search the knowledge graph for, in plain natural "
                             "language, e.g. 'Who directed Tokyo Godfathers?'.")


def _resolve(path: str) -> Any:
    """The object at ``package.module:attribute``."""
    module, _, attribute = path.partition(":")
    value = importlib.import_module(module)
    return getattr(value, attribute) if attribute else value


@dataclass(frozen=True)
class WrittenInput:
    """The input a method's LLM writes from the question, which a user may write instead:
    SimGRAG's query pattern, UltRAG's logical query. With it, ``kgrag ask --<option>`` and
    ``kgrag demo`` run the method without an LLM; a method without one (``None`` on its spec)
    runs from the question text alone (its LLM-free mode, or its LLM mode with ``--llm``)."""

    #: the ``kgrag ask`` option that takes it, without dashes (``"pattern"``: ``--pattern``)
    option: str
    #: the method's name as its error messages say it (``"SimGRAG"``)
    owner: str
    #: what it is (``"query pattern"``): "--pattern is SimGRAG's query pattern", "SimGRAG needs
    #: a query pattern"
    kind: str
    #: the option's ``--help``
    help: str
    #: a sketch of it for the error without it (``'"Entity" -> relation'``)
    sketch: str
    #: ``package.module:function`` turning the text into the method's input; raises a
    #: :class:`~kgrag.errors.KgragError` on malformed text. ``kgrag ask`` calls it before the
    #: graph is read, so a typo fails in milliseconds
    parse: str
    #: the method's entry point taking the parsed input: ``getattr(method, retrieve)(parsed,
    #: question)`` returns a ``RetrievalResult``
    retrieve: str
    #: the input for "what is the <relation> of <head>?", written from one fact of any graph
    #: (``kgrag demo --data``): ``from_fact(head, relation) -> text``
    from_fact: Callable[[str, str], str]

    def parser(self) -> Callable[[str], Any]:
        """The :attr:`parse` function (imported now)."""
        return _resolve(self.parse)


@dataclass(frozen=True)
class MethodSpec:
    """What kgrag needs to know about one method (see the module docstring)."""

    #: short identifier: the subcommand, ``--method`` value and result ``method`` field
    name: str
    #: the method class, as ``package.module:Class`` (or the class itself)
    cls: str | type
    #: ``"graph"``: built by ``Class.from_graph(graph, *, llm=None, embedder=None, **params)``;
    #: ``"documents"``: by ``Class.from_documents(docs, *, llm=None, embedder=None, **params)``
    builds_from: Literal["graph", "documents"] = "graph"
    #: the retriever's search-tool name and description (LangChain ``as_search_tool``,
    #: LlamaIndex ``as_tool``)
    tool_name: str = "knowledge_graph_search"
    tool_description: str = DEFAULT_TOOL_DESCRIPTION
    #: the input the method's LLM writes, which a user may give by hand instead (``kgrag ask
    #: --pattern``); None: the method runs from the question text alone
    written_input: WrittenInput | None = None
    #: ``kgrag eval``: the modes it runs and the datasets it applies to. ``llm-free`` calls
    #: ``retrieve`` on a method built without an LLM, ``llm`` calls ``answer``; ``oracle``
    #: needs ``eval_runner``
    eval_modes: tuple[str, ...] = ("llm-free", "llm")
    eval_datasets: tuple[str, ...] | None = None
    #: ``package.module:function`` building a method-specific question runner for ``kgrag eval``
    #: (signature of :func:`kgrag.eval.harness.generic_runner`); None: the generic one
    eval_runner: str | None = None
    #: extra constructor parameters ``kgrag ask`` passes
    ask_params: dict[str, Any] = field(default_factory=dict)

    def method_class(self) -> type[KGMethod]:
        """The method class (imported now if given by path)."""
        return _resolve(self.cls) if isinstance(self.cls, str) else self.cls

    @property
    def datasets(self) -> tuple[str, ...]:
        """The ``kgrag eval`` datasets: as given, else every dataset of its input kind."""
        if self.eval_datasets is not None:
            return self.eval_datasets
        return KG_DATASETS if self.builds_from == "graph" else TEXT_DATASETS

    @property
    def kind(self) -> str:
        """``"kg"`` or ``"text"``: the dataset kind ``kgrag eval`` gives it."""
        return "kg" if self.builds_from == "graph" else "text"

    def build(self, source: Any, *, llm: Any = None, embedder: Any = None, **params: Any
              ) -> KGMethod:
        """The method over ``source`` (a graph or documents, per :attr:`builds_from`)."""
        cls = self.method_class()
        factory = cls.from_graph if self.builds_from == "graph" else cls.from_documents
        return factory(source, llm=llm, embedder=embedder, **params)

    def build_with(self, factory: str, source: Any, **keywords: Any) -> KGMethod:
        """The method made by its ``factory`` -- ``"from_graph"`` (a framework graph converted
        first, :func:`~kgrag.graph.sources.coerce.as_graph_store`), ``"from_documents"`` or
        ``"load"`` -- with ``keywords``: what both adapters' factories call. ``TypeError`` when
        the method has no such factory."""
        cls = self.method_class()
        build = getattr(cls, factory, None)
        if build is None:
            raise TypeError(f"{cls.__name__} has no {factory}()")
        if factory == "from_graph" and self.builds_from == "graph":
            from kgrag.graph.sources.coerce import as_graph_store

            source = as_graph_store(source)
        return build(source, **keywords)


#: name -> spec, in the order the CLI, the demo and the docs list them
METHODS: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec, *, replace: bool = False) -> MethodSpec:
    """Add ``spec`` to the registry (``replace=True`` to overwrite a registered name)."""
    if not spec.name or not spec.name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"a method name is a short identifier, got {spec.name!r}")
    if spec.builds_from not in ("graph", "documents"):
        raise ValueError("builds_from must be 'graph' or 'documents'")
    if spec.name in METHODS and not replace:
        raise ValueError(f"method {spec.name!r} is already registered (replace=True overrides)")
    METHODS[spec.name] = spec
    return spec


def unregister_method(name: str) -> None:
    """Remove a method (tests register toy methods and remove them again)."""
    METHODS.pop(name, None)


def wrapped_method(wrapper: type, hint: str) -> MethodSpec:
    """The spec of the method an adapter class wraps (its ``method_name``); a ``TypeError``
    ending with ``hint`` (what to use instead) for a class that wraps none."""
    name = getattr(wrapper, "method_name", None)
    if name is None:
        raise TypeError(f"{wrapper.__name__} wraps no registered method: {hint}")
    return get_method(name)


def get_method(name: str) -> MethodSpec:
    """The spec registered as ``name``; else :class:`~kgrag.errors.UnknownMethodError` (a
    ``KeyError``) naming the registered ones and the closest."""
    try:
        return METHODS[name]
    except (KeyError, TypeError):
        raise UnknownMethodError(f"unknown method {name!r}; registered: "
                                 f"{', '.join(METHODS)}",
                                 suggest=(str(name), list(METHODS))) from None


def method_names(builds_from: str | None = None) -> list[str]:
    """Registered names, optionally only those built from ``"graph"`` or ``"documents"``."""
    return [n for n, s in METHODS.items() if builds_from in (None, s.builds_from)]


# ---------------------------------------------------------------------- the five methods
register_method(MethodSpec(
    name="byokg", cls="kgrag.methods.byokg:ByoKGRAG",
    tool_name="byokg_graph_search",
    tool_description=(
        "Retrieve knowledge-graph facts (triples, relation paths, query results) that answer a "
        "natural-language question. Input: the question."),
    eval_modes=("oracle", "llm-free", "llm"), eval_runner="kgrag.eval.harness:byokg_runner"))
register_method(MethodSpec(
    name="simgrag", cls="kgrag.methods.simgrag:SimGRAG",
    tool_name="knowledge_graph_subgraph_search",
    tool_description=(
        "Find the knowledge-graph subgraphs that best match the facts a question asks about "
        "(SimGRAG). Input: a natural-language question. Output: small sets of "
        "(head, relation, tail) facts, closest match first."),
    written_input=WrittenInput(
        option="pattern", owner="SimGRAG", kind="query pattern",
        help="SimGRAG query pattern (a list of triples) instead of an LLM, e.g. "
             "'[(\"UNKNOWN film 1\", \"directed_by\", \"Satoshi Kon\")]'",
        sketch='[("UNKNOWN x 1", "relation", "Entity")]',
        parse="kgrag.methods.simgrag.pattern:pattern_from_text", retrieve="retrieve_pattern",
        from_fact=lambda head, relation: repr([(head, relation, "UNKNOWN thing 1")])),
    eval_modes=("oracle", "llm"), eval_runner="kgrag.eval.harness:simgrag_runner",
    ask_params={"top_k": 3}))
register_method(MethodSpec(
    name="ultrag", cls="kgrag.methods.ultrag:UltRAG",
    tool_name="knowledge_graph_answer_question",
    tool_description=(
        "Answer a question in plain words from the knowledge graph (UltRAG: an LLM turns it "
        "into a logical query, run over the whole graph). Input: the question as a user would "
        "ask it -- not a query (to run a query you wrote in UltRAG's query language, use "
        "knowledge_graph_execute_logical_query). Output: candidate answer entities with "
        "scores, best first."),
    written_input=WrittenInput(
        option="query", owner="UltRAG", kind="logical query",
        help="UltRAG logical query (DSL) instead of an LLM, e.g. '\"Japan\" -> country_of_inv'",
        sketch='"Entity" -> relation', parse="kgrag.methods.ultrag.query:parse_query",
        retrieve="retrieve_query", from_fact=lambda head, relation: f'"{head}" -> {relation}'),
    eval_modes=("oracle", "llm"), eval_runner="kgrag.eval.harness:ultrag_runner",
    ask_params={"linking": "exact"}))
register_method(MethodSpec(
    name="graphraft", cls="kgrag.methods.graphraft.pipeline:GraphRAFT",
    tool_name="graph_query_search",
    tool_description=(
        "Find knowledge-graph entities that answer a question by running the best-matching "
        "graph queries around the entities it mentions. Input: the question."),
    eval_modes=("oracle", "llm-free", "llm"), eval_runner="kgrag.eval.harness:graphraft_runner"))
register_method(MethodSpec(
    name="ketrag", cls="kgrag.methods.ketrag:KETRAG", builds_from="documents",
    tool_name="document_graph_search",
    tool_description=(
        "Search the indexed documents for context relevant to a question (KET-RAG): facts from "
        "a knowledge-graph skeleton of the key passages plus keyword-matched text passages. "
        "Input: the question. Output: entities, relationships and passages."),
    eval_modes=("llm-free", "llm"), eval_runner="kgrag.eval.harness:ketrag_runner"))
