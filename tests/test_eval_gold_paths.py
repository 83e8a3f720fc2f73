"""`kgrag eval --questions` with gold relation paths: the oracle mode on your own graph."""

from __future__ import annotations

import json

import pytest

from kgrag.errors import GraphFormatError
from kgrag.eval.datasets import load_jsonl
from kgrag.eval.oracles import simgrag_pattern
from kgrag.eval.runner import evaluate, user_dataset
from kgrag.graph.base import PathStep

KB = [
    ("Paprika", "directed_by", "Satoshi Kon"), ("Perfect Blue", "directed_by", "Satoshi Kon"),
    ("Paprika", "release_year", "2006"), ("Perfect Blue", "release_year", "1997"),
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Tokyo Godfathers", "release_year", "2003"),
    ("Akira", "directed_by", "Katsuhiro Otomo"), ("Akira", "release_year", "1988"),
    ("Satoshi Kon", "born_in", "Sapporo"), ("Katsuhiro Otomo", "born_in", "Tome"),
]
QUESTIONS = [
    {"id": "q1", "question": "where was the director of Paprika born?", "answers": ["Sapporo"],
     "entities": ["Paprika"], "path": "directed_by -> born_in"},
    {"id": "q2", "question": "which films did the director of Akira make?", "answers": ["Akira"],
     "entities": ["Akira"], "path": [{"relation": "directed_by", "direction": "out"},
                                     {"relation": "directed_by", "direction": "in"}]},
    {"id": "q3", "question": "which Satoshi Kon film came out in 2006?", "answers": ["Paprika"],
     "paths": [{"entity": "Satoshi Kon", "path": "directed_by_inv"},
               {"entity": "2006", "path": ["~release_year"]}]},
]


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "kb.tsv").write_text("".join("\t".join(t) + "\n" for t in KB), encoding="utf-8")
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS),
                                       encoding="utf-8")
    return tmp_path


def test_jsonl_gold_paths_and_branches(files):
    q1, q2, q3 = load_jsonl(files / "qa.jsonl")
    assert q1.relation_path == (PathStep("directed_by", "out"), PathStep("born_in", "out"))
    assert q2.relation_path[1] == PathStep("directed_by", "in") and q2.qtype == "2-hop"
    assert q3.entities == ("Satoshi Kon", "2006") and q3.qtype == "2-branch"
    assert q3.gold_branches == (("Satoshi Kon", (PathStep("directed_by", "in"),)),
                                ("2006", (PathStep("release_year", "in"),)))
    triples, answer = simgrag_pattern(q3)
    assert answer == "UNKNOWN answer 1"
    assert triples == [("UNKNOWN answer 1", "director", "Satoshi Kon"),  # phrase table
                       ("UNKNOWN answer 1", "release year", "2006")]


@pytest.mark.parametrize("bad", [{"question": "q", "answers": [], "path": "r"},  # no entity
                                 {"question": "q", "answers": [], "paths": []},
                                 {"question": "q", "answers": [], "paths": [{"path": "r"}]},
                                 {"question": "q", "entities": ["a"], "path": 3}])
def test_bad_gold_paths_name_the_line(tmp_path, bad):
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(GraphFormatError, match="bad.jsonl:1: bad gold path"):
        load_jsonl(tmp_path / "bad.jsonl")


@pytest.mark.parametrize("method", ["simgrag", "ultrag", "byokg"])
def test_oracle_mode_on_your_own_graph(files, method, minilm):
    dataset = user_dataset(files / "qa.jsonl", graph=files / "kb.tsv")
    summary = evaluate(method, dataset, mode="oracle", out_dir=files / "o", embedder=minilm,
                       progress=False)
    assert summary["evaluated"] == 3
    assert summary["metrics"]["answer_recall"] == 100.0
    records = [json.loads(line) for line in
               (files / "o" / f"{method}__custom-qa__oracle.jsonl").read_text().splitlines()]
    conj = next(r for r in records if r["id"] == "q3")
    if method == "ultrag":  # the two branches are AND-ed: only Paprika is in both
        assert conj["extra"]["query"].startswith("AND(") and conj["ranked"][0] == "Paprika"
    if method == "simgrag":
        assert conj["ranked"][0] == "Paprika"


def test_graphraft_selects_nothing_for_branches(files, minilm):
    dataset = user_dataset(files / "qa.jsonl", graph=files / "kb.tsv")
    evaluate("graphraft", dataset, mode="oracle", out_dir=files / "o", embedder=minilm,
             progress=False)
    records = {json.loads(line)["id"]: json.loads(line) for line in
               (files / "o" / "graphraft__custom-qa__oracle.jsonl").read_text().splitlines()}
    assert records["q1"]["extra"]["gold_query_enumerated"]
    assert not records["q3"]["extra"]["gold_query_enumerated"]


def test_cli_oracle_with_gold_paths_and_relation_labels(files, capsys):
    """`kgrag eval --questions` on a Wikidata-style copy of the graph with a label file."""
    from kgrag.cli import main

    ids = {"directed_by": "P57", "release_year": "P577", "born_in": "P19"}
    (files / "wd.tsv").write_text("".join(f"{h}\t{ids[r]}\t{t}\n" for h, r, t in KB),
                                  encoding="utf-8")
    (files / "labels.tsv").write_text("P57\tdirected by\nP577\trelease year\nP19\tborn in\n",
                                      encoding="utf-8")
    renamed = []
    for q in QUESTIONS:
        q = json.loads(json.dumps(q))
        for r, pid in ids.items():
            q = json.loads(json.dumps(q).replace(r, pid))
        renamed.append(q)
    (files / "wd.jsonl").write_text("".join(json.dumps(q) + "\n" for q in renamed),
                                    encoding="utf-8")
    assert main(["eval", "--method", "simgrag", "--questions", str(files / "wd.jsonl"),
                 "--graph", str(files / "wd.tsv"), "--relation-labels", str(files / "labels.tsv"),
                 "--out", str(files / "wd-out"), "--no-cache"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| simgrag"))
    assert "| 3 | 100.0 |" in row  # 3 questions, Hits@1 100


def test_your_own_dataset_needs_no_datasets_folder(files, minilm, monkeypatch, tmp_path):
    """A user_dataset carries its own paths: evaluate() must not look for ../shared/data (it
    raised FileNotFoundError in a checkout without that folder)."""
    from kgrag.eval import runner

    monkeypatch.setattr(runner, "data_root_candidates",
                        lambda: [("nowhere", tmp_path / "no-such-folder")])
    with pytest.raises(FileNotFoundError):
        runner.default_data_root()
    dataset = user_dataset(files / "qa.jsonl", graph=files / "kb.tsv")
    summary = evaluate("ultrag", dataset, mode="oracle", out_dir=files / "o2", embedder=minilm,
                       progress=False)
    assert summary["metrics"]["answer_recall"] > 0
