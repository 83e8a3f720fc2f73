"""``kgrag demo``: the offline demo, a list of small steps over the bundled movie graph.

The demo is a list of :class:`DemoStep` objects run in order against one :class:`DemoContext`
(the loaded graph, an entity linker, an output function and a scratch ``state`` dict that later
steps may read). The core steps below show loading, linking, path following and shortest paths
without any LLM or model download.

Commands extend the demo without touching this file: a command whose entry in
:data:`kgrag.commands.COMMANDS` says ``demo=True`` defines ``demo_steps() -> list[DemoStep]``
in its module (each method's command does), imported lazily when the demo runs (so ``import
kgrag`` never imports a method). Their steps run after the core steps, in that list's order.

The bundled data is found by :func:`kgrag.data.demo_data_path`.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import kgrag.commands
from kgrag._version import __version__
from kgrag.commands.common import add_command
from kgrag.data import bundled_data_path, demo_data_path
from kgrag.graph.conversions import read_triples
from kgrag.graph.memory import KnowledgeGraph


def demo_step_modules() -> list[str]:
    """Every module whose ``demo_steps()`` the demo runs: the commands of
    :data:`kgrag.commands.COMMANDS` with ``demo=True``, in its order."""
    registry = kgrag.commands.COMMANDS
    return list(dict.fromkeys(command.module for command in registry if command.demo))


@dataclass
class DemoContext:
    """What every demo step gets: the graph, a linker, ``out`` for printing, shared ``state``."""

    kg: KnowledgeGraph
    data_path: Path
    out: Callable[[str], None] = print
    state: dict[str, Any] = field(default_factory=dict)
    _linker: Any = None

    @property
    def linker(self) -> Any:
        """A fuzzy :class:`~kgrag.linking.EntityLinker` over the graph (built on first use)."""
        if self._linker is None:
            from kgrag.linking import EntityLinker

            self._linker = EntityLinker.from_graph(self.kg, mode="fuzzy")
        return self._linker


@dataclass(frozen=True)
class DemoStep:
    """One titled step of the demo; ``run`` prints through ``ctx.out``."""

    title: str
    run: Callable[[DemoContext], None]


# ---------------------------------------------------------------------- core steps
def _show_graph(ctx: DemoContext) -> None:
    kg = ctx.kg
    ctx.out(f"Loaded {ctx.data_path.name}: {kg.num_nodes} entities, {kg.num_edges} edges, "
            f"{kg.num_relations} relations.")
    top = ", ".join(f"{name} ({count})" for name, count in kg.relation_histogram()[:6])
    ctx.out(f"Most frequent relations: {top}")


def _link_mentions(ctx: DemoContext) -> None:
    ctx.out("Fuzzy entity linking (rapidfuzz; top 3 per mention):")
    for mention in ("tokyo godfather", "Jamaican people", "Kurosawa", "Agnes Varda"):
        links = ctx.linker.link(mention, top_m=3)
        shown = ", ".join(f"{link.name} {link.score:.2f} [{link.source}]" for link in links)
        ctx.out(f"  {mention!r:20} -> {shown}")


def _question_without_llm(ctx: DemoContext) -> None:
    from kgrag.linking import extract_mentions

    question = "Who directed Tokyo Godfathers?"
    mentions = extract_mentions(question, ctx.linker)
    entities = [m.name for m in mentions]
    ctx.out(f"Question: {question}")
    ctx.out(f"  entities found in the question: {entities}")
    answers = sorted({t.tail for t in ctx.kg.one_hop(entities, direction="out",
                                                     relations=["directed_by"])})
    ctx.out(f"  directed_by -> {answers}")
    ctx.state["question_entities"] = entities


def _follow_relation_path(ctx: DemoContext) -> None:
    for source, path in (("Tokyo Godfathers", "directed_by -> born_in -> located_in"),
                         ("Satoshi Kon", "directed_by_inv -> release_year")):
        ctx.out(f"Follow {path!r} from {source}:")
        for found in ctx.kg.follow_path([source], path):
            ctx.out(f"  {found.verbalize()}")


def _shortest_paths(ctx: DemoContext) -> None:
    for source, target in (("Satoshi Kon", "Bong Joon-ho"),
                           ("Jamaica", "United States of America")):
        found = ctx.kg.shortest_paths([source], [target], max_hops=4)
        ctx.out(f"Shortest path {source} .. {target} (undirected, at most 4 hops):")
        ctx.out(f"  {found[0].verbalize()}" if found else "  none within 4 hops")


CORE_STEPS: list[DemoStep] = [
    DemoStep("The bundled graph", _show_graph),
    DemoStep("Entity linking", _link_mentions),
    DemoStep("A question answered by linking and one hop (no LLM)", _question_without_llm),
    DemoStep("Relation paths", _follow_relation_path),
    DemoStep("Shortest paths", _shortest_paths),
]


def demo_steps() -> list[DemoStep]:
    """The core steps followed by the steps of every module in :func:`demo_step_modules`."""
    steps = list(CORE_STEPS)
    for module_path in demo_step_modules():
        steps.extend(importlib.import_module(module_path).demo_steps())
    return steps


# ---------------------------------------------------------------------- any other graph
def is_bundled(path: str | Path) -> bool:
    """Whether ``path`` is the bundled movie graph (the curated steps name its movies)."""
    return Path(path).resolve() == bundled_data_path()


@dataclass(frozen=True)
class Sample:
    """Names taken from the user's graph for the demo: a fact ``(head, relation, tail)``, the
    relation that continues from ``tail`` (or ``None``), and a node far from ``head``."""

    head: str
    relation: str
    tail: str
    next_relation: str | None
    far: str


def sample_of(kg: KnowledgeGraph) -> Sample | None:
    """A fact of ``kg``'s most frequent relation whose head has the most edges, preferring a
    tail the walk can go on from; ``None`` for a graph without edges."""
    if not kg.num_edges:
        return None
    relation = kg.relation_histogram()[0][0]
    degrees = kg.degree(kg.iter_node_names())
    facts = sorted((t for t in kg.triples() if t.relation == relation),
                   key=lambda t: (-degrees.get(t.head, 0), t.head))
    best = None
    for fact in facts[:200]:
        onward = [t.relation for t in kg.one_hop([fact.tail], direction="out")
                  if t.tail != fact.head]
        if onward:
            best = (fact, onward[0])
            break
    fact, next_relation = best if best else (facts[0], None)
    far = max(degrees, key=lambda n: (n not in (fact.head, fact.tail), degrees[n]))
    return Sample(fact.head, fact.relation, fact.tail, next_relation, far)


def _words(relation: str) -> str:
    return relation.replace("_", " ").replace(".", " ").strip()


def _generic_graph(ctx: DemoContext) -> None:
    _show_graph(ctx)
    sample = ctx.state["sample"]
    ctx.out(f"Example fact: ({sample.head}, {sample.relation}, {sample.tail})")


def _generic_linking(ctx: DemoContext) -> None:
    sample = ctx.state["sample"]
    ctx.out("Fuzzy entity linking (rapidfuzz; top 3 per mention):")
    for mention in dict.fromkeys((sample.head.lower(), sample.tail[:-1] or sample.tail,
                                  sample.far)):
        links = ctx.linker.link(mention, top_m=3)
        shown = ", ".join(f"{link.name} {link.score:.2f} [{link.source}]" for link in links)
        ctx.out(f"  {mention!r:20} -> {shown or 'no match'}")


def _generic_question(ctx: DemoContext) -> None:
    from kgrag.linking import extract_mentions

    sample = ctx.state["sample"]
    question = f"What is the {_words(sample.relation)} of {sample.head}?"
    entities = [m.name for m in extract_mentions(question, ctx.linker)]
    ctx.out(f"Question: {question}")
    ctx.out(f"  entities found in the question: {entities}")
    answers = sorted({t.tail for t in ctx.kg.one_hop(entities, direction="out",
                                                     relations=[sample.relation])})
    ctx.out(f"  {sample.relation} -> {answers}")
    ctx.state["question"], ctx.state["question_entities"] = question, entities


def _generic_paths(ctx: DemoContext) -> None:
    sample = ctx.state["sample"]
    steps = [sample.relation] + ([sample.next_relation] if sample.next_relation else [])
    path = " -> ".join(steps)
    ctx.out(f"Follow {path!r} from {sample.head}:")
    for found in ctx.kg.follow_path([sample.head], path)[:5]:
        ctx.out(f"  {found.verbalize()}")
    shortest = ctx.kg.shortest_paths([sample.head], [sample.far], max_hops=4)
    ctx.out(f"Shortest path {sample.head} .. {sample.far} (undirected, at most 4 hops):")
    ctx.out(f"  {shortest[0].verbalize()}" if shortest else "  none within 4 hops")


def _generic_method_step(spec: Any) -> DemoStep:
    """``kgrag ask``'s LLM-free retrieval with the method of registry entry ``spec`` for the
    sample question; a method that needs what its LLM would write (SimGRAG's pattern, UltRAG's
    query: ``spec.written_input``) gets it written from the sample fact."""
    def run(ctx: DemoContext) -> None:
        from kgrag.commands.ask import retrieve

        sample, question = ctx.state["sample"], ctx.state["question"]
        hook = spec.written_input
        written = hook.from_fact(sample.head, sample.relation) if hook else None
        result = retrieve(ctx.kg, question, spec.name, written=written, top=3)
        ctx.out(f"{question}{f' with the {hook.option} {written}' if hook else ''}:")
        for item in result.items[:3]:
            ctx.out(f"  {item.verbalize()}")
        if not result.items:
            ctx.out(f"  nothing: {result.metadata.get('empty_reason', 'no match')}")
    return DemoStep(f"{spec.name}: one LLM-free retrieval on your graph", run)


def generic_steps() -> list[DemoStep]:
    """The demo for any graph: the core steps on names taken from it (:func:`sample_of`),
    then one LLM-free retrieval per registered graph method."""
    from kgrag.methods.registry import get_method, method_names

    return [DemoStep("Your graph", _generic_graph), DemoStep("Entity linking", _generic_linking),
            DemoStep("A question answered by linking and one hop (no LLM)", _generic_question),
            DemoStep("Relation paths and shortest paths", _generic_paths),
            *(_generic_method_step(get_method(name)) for name in method_names("graph"))]


def run_demo(out: Callable[[str], None] = print, *, data_path: str | Path | None = None,
             steps: Sequence[DemoStep] | None = None) -> DemoContext:
    """Load the demo graph and run ``steps`` (default: :func:`demo_steps` on the bundled movie
    graph, :func:`generic_steps` on any other graph, whose names they take from it); returns
    the context."""
    path = Path(data_path) if data_path is not None else demo_data_path()
    ctx = DemoContext(kg=read_triples(path), data_path=path, out=out)
    if steps is None and not is_bundled(path):
        sample = sample_of(ctx.kg)
        if sample is None:
            out(f"{path} holds no triples: nothing to show")
            return ctx
        ctx.state["sample"] = sample
        steps = generic_steps()
    selected = demo_steps() if steps is None else list(steps)
    for number, step in enumerate(selected, start=1):
        out("")
        out(f"== {number}. {step.title}")
        step.run(ctx)
    return ctx


# ---------------------------------------------------------------------- the command
def _cmd_demo(args: argparse.Namespace) -> int:
    if args.data_path:
        print(demo_data_path())
        return 0
    print(f"kgrag {__version__} demo (offline; no LLM, no model download)")
    run_demo(print, data_path=args.data)
    return 0


def register(subparsers: Any) -> None:
    with_steps = ", ".join(c.name for c in kgrag.commands.COMMANDS if c.demo)
    parser = add_command(
        subparsers, "demo", help="run the offline demo on the bundled movie graph",
        description="Loads the bundled movie graph (a few hundred triples, shipped with the "
                    "package) and walks through it: entity linking, a question answered by "
                    "linking and one hop, relation paths and shortest paths, then one LLM-free "
                    f"step of each method that has one ({with_steps}). Offline: no LLM, no "
                    "model download, no API key.",
        examples=["kgrag demo", "kgrag demo --data my_triples.tsv",
                  "kgrag demo --data-path    # where the bundled movies.tsv is"],
        notes="On another graph (--data) the steps take their names from it: a fact of its "
              "most frequent relation, a question about it, its paths, then one LLM-free "
              "retrieval per method.")
    parser.add_argument("--data", default=None,
                        help="another triples file to run the demo on (default: "
                             "$KGRAG_DEMO_DATA, else the bundled movies.tsv)")
    parser.add_argument("--data-path", action="store_true",
                        help="print the path of the demo's triples file (the bundled "
                             "movies.tsv, or $KGRAG_DEMO_DATA) and exit")
    parser.set_defaults(func=_cmd_demo)
