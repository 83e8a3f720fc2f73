"""Dataset loaders: formats, gold relation paths that really reach the gold answers."""

from __future__ import annotations

import pytest
from shared_data import shared_data

from kgrag.errors import GraphFormatError
from kgrag.eval import load_jsonl, load_metaqa, load_pathquestion, metaqa_relation_path
from kgrag.graph import read_triples


def test_metaqa_relation_paths():
    steps = metaqa_relation_path("movie_to_director_to_movie_to_genre")
    assert [(s.relation, s.direction) for s in steps] == [
        ("directed_by", "out"), ("directed_by", "in"), ("has_genre", "out")]
    with pytest.raises(ValueError):
        metaqa_relation_path("actor_to_actor")


def test_metaqa_gold_paths_reach_the_answers():
    kg = read_triples(shared_data("metaqa") / "kb_reconstructed.txt")
    for hop in (1, 2, 3):
        examples = load_metaqa(shared_data("metaqa"), hop, limit=40, seed=1)
        assert len(examples) == 40
        for ex in examples:
            ends = {p.target for p in kg.follow_path(ex.entities, ex.relation_path)}
            assert set(ex.answers) <= ends, ex
    again = load_metaqa(shared_data("metaqa"), 1, limit=40, seed=1)
    assert again == load_metaqa(shared_data("metaqa"), 1, limit=40, seed=1)  # seeded sample


def test_pathquestion_paths_and_answers():
    kg = read_triples(shared_data("pathquestion") / "3H-kb.txt")
    examples = load_pathquestion(shared_data("pathquestion") / "PQ-3H.txt", limit=50)
    for ex in examples:
        assert len(ex.relation_path) == 3 and len(ex.path_entities) == 4
        ends = {p.target for p in kg.follow_path(ex.entities, ex.relation_path)}
        assert ends & set(ex.answers)


def test_pathquestion_answers_with_parentheses():
    from kgrag.eval.datasets import _split_pathquestion_answers as split

    assert split("united_kingdom(united_kingdom/)") == ["united_kingdom", "united_kingdom"]
    assert split("PG_(USA)(PG_(USA)/R/)") == ["PG_(USA)", "PG_(USA)", "R"]
    assert split("plain") == ["plain"]


def test_jsonl_loader_and_errors(tmp_path):
    good = tmp_path / "qa.jsonl"
    good.write_text('{"question": "Who?", "answers": ["A"], "entities": ["E"]}\n\n'
                    '{"question": "What?", "answer": "B"}\n', encoding="utf-8")
    examples = load_jsonl(good)
    assert [(e.question, e.answers, e.entities) for e in examples] == [
        ("Who?", ("A",), ("E",)), ("What?", ("B",), ())]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "ok", "answers": []}\n{not json\n', encoding="utf-8")
    with pytest.raises(GraphFormatError, match=":2:"):
        load_jsonl(bad)
