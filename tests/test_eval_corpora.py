"""MuSiQue and HotpotQA loaders on the real files in ../shared/data, and their error handling."""

from __future__ import annotations

import json

import pytest
from shared_data import shared_data

from kgrag.errors import GraphFormatError
from kgrag.eval import load_hotpotqa, load_musique
from kgrag.eval.metrics import answer_recall


def test_musique_ketrag_sample():
    data = load_musique(shared_data("musique"))
    assert len(data.examples) == 500 and len(data.passages) == 6761
    first = data.examples[0]
    assert first.id == "2hop__10515_21567" and first.answers == ("John Kukuzelis",)
    assert first.qtype == "2hop"
    assert {ex.qtype for ex in data.examples} == {"2hop", "3hop1", "3hop2", "4hop1", "4hop2",
                                                  "4hop3"}
    assert data.passages[0].startswith("Clio Goldsmith (born 16 June 1957)")


def test_musique_hipporag_subset_has_aliases_and_titled_passages():
    data = load_musique(shared_data("musique"), subset="hipporag_train100")
    assert len(data.examples) == 100 and len(data.passages) == 1890
    first = data.examples[0]
    assert first.answers == ("G. Stanley Hall", "Stanley Hall")
    assert data.passages[0].startswith("Journal of Mathematical Physics: The Journal of")
    # the corpus holds the supporting paragraph that names the answer
    corpus = "\n".join(data.passages)
    assert "Hall, who was the first president of the American Psychological Association" in corpus
    assert answer_recall(corpus, ["American Psychological Association"]) == 1.0


def test_hotpotqa_questions_and_corpus():
    data = load_hotpotqa(shared_data("hotpotqa"))
    assert len(data.examples) == 100 and len(data.passages) == 994
    first = data.examples[0]
    assert first.question == "If Gallu is a demon Lilu is what?" and first.answers == ("a spirit",)
    assert first.qtype == "bridge/easy" and first.id == "5a77ec115542992a6e59dff7"
    assert data.passages[0].startswith("Demon Dice: Demon Dice, originally published")


def test_limit_is_a_seeded_sample_in_file_order():
    a = load_musique(shared_data("musique"), limit=20, seed=3).examples
    b = load_musique(shared_data("musique"), limit=20, seed=3).examples
    c = load_musique(shared_data("musique"), limit=20, seed=4).examples
    assert a == b and a != c and len(a) == 20
    everything = [ex.id for ex in load_musique(shared_data("musique")).examples]
    positions = [everything.index(ex.id) for ex in a]
    assert positions == sorted(positions)


def test_bad_files_raise_clear_errors(tmp_path):
    base = tmp_path / "musique" / "ketrag_500"
    base.mkdir(parents=True)
    (base / "qa-pairs.json").write_text("[{\"id\": \"x\", \"question\": \"q\"}]", encoding="utf-8")
    (base / "document.txt").write_text("a\n", encoding="utf-8")
    with pytest.raises(GraphFormatError, match="answer"):
        load_musique(tmp_path / "musique")
    (base / "qa-pairs.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(GraphFormatError, match="not JSON"):
        load_musique(tmp_path / "musique")
    with pytest.raises(ValueError, match="subset"):
        load_musique(tmp_path / "musique", subset="dev")
    hot = tmp_path / "hotpotqa" / "hipporag_train100"
    hot.mkdir(parents=True)
    (hot / "hotpotqa_train.json").write_text(json.dumps(
        [{"_id": "1", "question": "q", "answer": "yes"}]), encoding="utf-8")
    (hot / "hotpotqa_train_corpus.json").write_text("[]", encoding="utf-8")
    with pytest.raises(GraphFormatError, match="title"):
        load_hotpotqa(tmp_path / "hotpotqa")
