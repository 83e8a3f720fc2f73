"""kgrag.viz (what is drawn, HTML and PNG output) and the ``kgrag ask`` command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kgrag import KnowledgeGraph
from kgrag.cli import main
from kgrag.context.types import Chunk, RetrievalResult, ScoredEntity, Subgraph, Triple
from kgrag.context.types import Path as KGPath
from kgrag.viz import build_view, question_entities_of, render, render_html, render_png
from kgrag.viz.layout import layout, merged_edges

MOVIES = Path(__file__).resolve().parents[1] / "examples" / "data" / "movies.tsv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

TRIPLES = [
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Paprika", "directed_by", "Satoshi Kon"),
    ("Satoshi Kon", "born_in", "Sapporo"),
    ("Sapporo", "located_in", "Japan"),
    ("Paprika", "has_genre", "Science Fiction"),
]


@pytest.fixture(scope="module")
def kg():
    return KnowledgeGraph.from_triples(TRIPLES)


def path_result() -> RetrievalResult:
    path = KGPath(("Tokyo Godfathers", "Satoshi Kon", "Sapporo"), ("directed_by", "born_in"),
                  score=0.9)
    return RetrievalResult("Where was the director of Tokyo Godfathers born?",
                           [path, Triple("Paprika", "directed_by", "Satoshi Kon", score=0.5)],
                           method="byokg", metadata={"entities": ["Tokyo Godfathers"]})


def entity_result() -> RetrievalResult:
    return RetrievalResult(
        "Who was born in Sapporo?", [ScoredEntity("Satoshi Kon", 1.0, "ultrag")], method="ultrag",
        metadata={"leaves": [[("Sapporo", 1.0)]], "query": '"Sapporo" -> born_in_inv'})


def test_paths_and_triples_become_retrieved_edges_with_roles_and_ranks():
    view = build_view(path_result())
    assert view.question_entities == ["Tokyo Godfathers"]
    assert {(e.head, e.relation, e.tail, e.retrieved) for e in view.edges} == {
        ("Tokyo Godfathers", "directed_by", "Satoshi Kon", True),
        ("Satoshi Kon", "born_in", "Sapporo", True),
        ("Paprika", "directed_by", "Satoshi Kon", True)}
    nodes = view.nodes
    assert nodes["Tokyo Godfathers"].role == "question"  # stays a question entity
    assert (nodes["Sapporo"].role, nodes["Sapporo"].rank, nodes["Sapporo"].score) == (
        "retrieved", 1, 0.9)
    assert (nodes["Satoshi Kon"].rank, nodes["Satoshi Kon"].score) == (1, 0.9)  # best of both
    assert (nodes["Paprika"].rank, nodes["Paprika"].score) == (2, 0.5)


def test_entities_are_connected_to_the_question_entities_through_the_graph(kg):
    alone = build_view(entity_result())
    assert alone.edges == [] and set(alone.nodes) == {"Sapporo", "Satoshi Kon"}
    view = build_view(entity_result(), kg)
    assert [(e.head, e.relation, e.tail, e.retrieved) for e in view.edges] == [
        ("Satoshi Kon", "born_in", "Sapporo", False)]
    assert view.nodes["Sapporo"].role == "question"
    assert view.nodes["Satoshi Kon"].role == "retrieved"


def test_each_question_entity_gets_its_own_connecting_path(kg):
    result = RetrievalResult("q", [ScoredEntity("Satoshi Kon", 1.0)],
                             metadata={"entities": ["Paprika", "Japan"]})
    view = build_view(result, kg)
    assert {(e.head, e.tail) for e in view.edges} == {
        ("Paprika", "Satoshi Kon"), ("Satoshi Kon", "Sapporo"), ("Sapporo", "Japan")}
    assert view.nodes["Sapporo"].role == "intermediate"
    # names the graph does not hold are skipped, not an error
    ghost = RetrievalResult("q", [ScoredEntity("Nobody", 1.0)], metadata={"entities": ["Paprika"]})
    assert build_view(ghost, kg).edges == []


def test_question_entities_from_each_methods_provenance():
    assert question_entities_of(path_result()) == ["Tokyo Godfathers"]
    assert question_entities_of(entity_result()) == ["Sapporo"]
    best = Subgraph((Triple("Perfect Blue", "has_genre", "Thriller"),), 0.6,
                    {"mapping": {"UNKNOWN film 1": "Perfect Blue", "Thriller": "Thriller"}})
    worse = Subgraph((Triple("Paprika", "has_genre", "Science Fiction"),), 0.3,
                     {"mapping": {"UNKNOWN film 1": "Paprika", "Thriller": "Science Fiction"}})
    assert question_entities_of(RetrievalResult("q", [best, worse])) == ["Thriller"]
    assert question_entities_of(RetrievalResult("q", [])) == []
    # an explicit list wins
    view = build_view(path_result(), question_entities=["Sapporo"])
    assert view.question_entities == ["Sapporo"]


def test_max_items_limits_the_drawing_and_chunks_are_kept_as_text():
    result = path_result()
    view = build_view(result, max_items=1)
    assert view.items_shown == 1 and view.items_total == 2 and "Paprika" not in view.nodes
    chunks = RetrievalResult("q", [Chunk("Satoshi Kon was born in Sapporo.", "c1", 0.8)],
                             method="ketrag")
    view = build_view(chunks)
    assert view.nodes == {} and [c.chunk_id for c in view.chunks] == ["c1"]
    with pytest.raises(ValueError):
        build_view(result, max_items=0)


def test_parallel_edges_merge_and_opposite_edges_curve():
    result = RetrievalResult("q", [Triple("A", "r1", "B"), Triple("A", "r2", "B"),
                                   Triple("B", "r3", "A"), Triple("C", "r4", "A")])
    edges = {(e.source, e.target): e for e in merged_edges(build_view(result))}
    assert edges[("A", "B")].label == "r1 / r2" and edges[("A", "B")].curved
    assert edges[("B", "A")].curved and not edges[("C", "A")].curved
    pos = layout(build_view(result))
    assert set(pos) == {"A", "B", "C"}
    assert all(0.0 <= x <= 1.0 and 0.0 <= y <= 1.0 for x, y in pos.values())


def test_html_is_standalone_names_the_nodes_and_escapes_them(tmp_path):
    result = path_result()
    result.items.append(Triple("<script>alert(1)</script>", "r", "Sapporo"))
    page = render_html(result, tmp_path / "sub" / "view.html").read_text(encoding="utf-8")
    for name in ("Tokyo Godfathers", "Satoshi Kon", "Sapporo", "Paprika", "directed_by"):
        assert name in page
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<svg" in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"',
                                                            "")
    assert "method: <b>byokg</b>" in page and "question entities: <b>Tokyo Godfathers</b>" in page


def test_png_is_written_for_graphs_and_for_text_only_results(tmp_path):
    path = render_png(path_result(), tmp_path / "view.png")
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 15_000
    text_only = RetrievalResult("q", [Chunk("Satoshi Kon was born in Sapporo.", "c1", 0.8)])
    data = render_png(text_only, tmp_path / "text.png").read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 5_000


def test_render_picks_the_format_by_suffix(tmp_path):
    assert render(entity_result(), tmp_path / "a.HTML").read_text(encoding="utf-8").startswith(
        "<!DOCTYPE html>")
    assert render(entity_result(), tmp_path / "a.png").read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match=".html or .png"):
        render(entity_result(), tmp_path / "a.svg")


# ------------------------------------------------------------------ kgrag ask
def test_ask_ultrag_prints_entities_and_draws_html_and_png(tmp_path, capsys):
    query = 'AND("Animation" -> has_genre_inv, "Japan" -> country_of_inv) -> directed_by'
    for suffix in ("html", "png"):
        out_file = tmp_path / f"ultrag.{suffix}"
        status = main(["ask", str(MOVIES), "Who directed the Japanese animated films?",
                       "--method", "ultrag", "--query", query, "--show", str(out_file)])
        assert status == 0 and out_file.exists()
    printed = capsys.readouterr().out
    # the default (hybrid) executor proves both directors on the graph: full membership
    assert re.search(r"1\. (Satoshi Kon|Hayao Miyazaki) \(1\.000\)", printed)
    assert re.search(r"2\. (Satoshi Kon|Hayao Miyazaki) \(1\.000\)", printed)
    assert "LLM calls: 0" in printed
    page = (tmp_path / "ultrag.html").read_text(encoding="utf-8")
    for name in ("Satoshi Kon", "Hayao Miyazaki", "Animation", "Japan"):
        assert name in page
    assert (tmp_path / "ultrag.png").read_bytes()[:8] == PNG_MAGIC


def test_ask_without_the_artifact_or_an_llm_is_a_clear_usage_error(capsys):
    for method in ("simgrag", "ultrag"):
        status = main(["ask", str(MOVIES), "Who directed Paprika?", "--method", method])
        assert status == 2
    err = capsys.readouterr().err
    assert "--pattern" in err and "--query" in err and "--llm" in err
    assert main(["ask", str(MOVIES), "q", "--method", "ultrag", "--query",
                 '"Paprika" -> directed_by', "--show", "out.svg"]) == 2
    assert main(["ask", str(MOVIES), "q", "--top", "0"]) == 2


@pytest.mark.slow
def test_ask_simgrag_pattern_with_png(tmp_path, capsys, minilm):
    out_file = tmp_path / "simgrag.png"
    pattern = ('[("UNKNOWN film 1", "directed by", "Satoshi Kon"), '
               '("UNKNOWN film 1", "genre", "Thriller")]')
    assert main(["ask", str(MOVIES), "Which thriller did Satoshi Kon direct?", "--method",
                 "simgrag", "--pattern", pattern, "--show", str(out_file)]) == 0
    printed = capsys.readouterr().out
    assert "1. [" in printed and "(Perfect Blue, directed_by, Satoshi Kon)" in printed
    data = out_file.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 20_000


@pytest.mark.slow
def test_ask_byokg_llm_free_draws_candidates_tied_to_the_question_entity(tmp_path, capsys,
                                                                         minilm):
    out_file = tmp_path / "byokg.html"
    assert main(["ask", str(MOVIES), "Where was the director of Tokyo Godfathers born?",
                 "--method", "byokg", "--top", "5", "--show", str(out_file)]) == 0
    printed = capsys.readouterr().out
    assert "LLM calls: 0" in printed and "Sapporo" in printed
    page = out_file.read_text(encoding="utf-8")
    assert "question entities: <b>Tokyo Godfathers</b>" in page
    # Sapporo is drawn, reached from the question entity by a dashed connecting path
    assert "Sapporo" in page and 'stroke-dasharray="5,4"' in page
    assert "Satoshi Kon -&gt; born_in -&gt; Sapporo" in page
