"""``kgrag demo --data my.tsv`` adapts to the given graph, and ``--data-path`` prints where the
bundled demo file is (issue 29, item 11)."""

from __future__ import annotations

from kgrag import KnowledgeGraph, cli
from kgrag.commands.demo import is_bundled, run_demo, sample_of
from kgrag.data import bundled_data_path
from kgrag.graph import read_triples

TRIPLES = [("Bob Tanaka", "reports_to", "Alice Moreau"),
           ("Alice Moreau", "reports_to", "Hannah Berg"),
           ("Carol Diaz", "reports_to", "Alice Moreau"),
           ("Alice Moreau", "works_in", "Engineering"), ("Bob Tanaka", "works_in", "Engineering"),
           ("Engineering", "part_of", "Acme Corp"), ("Project Falcon", "uses", "Rust")]


def _write(tmp_path):
    path = tmp_path / "company.tsv"
    path.write_text("head\trelation\ttail\n" + "".join("\t".join(t) + "\n" for t in TRIPLES))
    return path


def test_the_sample_comes_from_the_graph():
    sample = sample_of(KnowledgeGraph.from_triples(TRIPLES))
    # the most frequent relation, from a head the walk can go on from
    assert (sample.head, sample.relation, sample.tail) == ("Bob Tanaka", "reports_to",
                                                           "Alice Moreau")
    assert sample.next_relation == "reports_to" and sample.far not in (sample.head,
                                                                         sample.tail)
    assert sample_of(KnowledgeGraph.from_triples([])) is None


def test_demo_on_another_graph_runs_every_step_on_its_names(tmp_path, capsys, minilm):
    path = _write(tmp_path)
    assert not is_bundled(path)
    lines: list[str] = []
    run_demo(lines.append, data_path=path)
    out = "\n".join(lines)
    for method in ("byokg", "simgrag", "ultrag", "graphraft"):
        assert f"{method}: one LLM-free retrieval on your graph" in out
    assert "Tokyo Godfathers" not in out and "has_genre" not in out
    assert "What is the reports to of Bob Tanaka?" in out
    assert "reports_to -> ['Alice Moreau']" in out
    assert "Bob Tanaka -> reports_to -> Alice Moreau -> reports_to -> Hannah Berg" in out
    assert "Alice Moreau (1.000)" in out  # UltRAG's query "Bob Tanaka" -> reports_to
    assert cli.main(["demo", "--data", str(path)]) == 0
    assert "Your graph" in capsys.readouterr().out


def test_demo_data_path_prints_the_bundled_file(capsys, monkeypatch):
    monkeypatch.delenv("KGRAG_DEMO_DATA", raising=False)
    assert cli.main(["demo", "--data-path"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(bundled_data_path()) and is_bundled(printed)
    assert read_triples(printed).num_edges > 100
