"""``kgrag graphraft export-training-data`` and GraphRAFT's demo step, on the movie graph."""

from __future__ import annotations

import json

import pytest

from kgrag import cli
from kgrag.commands.demo import run_demo
from kgrag.data import demo_data_path
from kgrag.methods.graphraft.training import read_qa_pairs


@pytest.fixture()
def movies():
    return str(demo_data_path())


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """MiniLM calls here are a few short texts each: one intra-op thread is as fast, and on a busy
    2-core machine two threads' spin-waits made this module ~4x slower (measured)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_from_metaqa_format(movies, tmp_path, capsys, minilm):
    qa = tmp_path / "qa.txt"
    qa.write_text(
        "who directed [Tokyo Godfathers]\tSatoshi Kon\n"
        "which films were set in [Tokyo]\tTokyo Godfathers\n"
        "what films did [Satoshi Kon] direct\tTokyo Godfathers|Perfect Blue|Millennium "
        "Actress|Paprika\n"
        "who is [Nobody Known]\tSomeone\n", encoding="utf-8")
    out = tmp_path / "out"
    status = cli.main(["graphraft", "export-training-data", movies, str(qa), str(out),
                       "--no-progress"])
    assert status == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0]) == {
        "questions": 4, "kept": 3, "dropped": 1, "answer_records": 3}
    selector = _records(out / "selector.jsonl")
    assert selector[0]["messages"] == [
        {"role": "user", "content": "who directed Tokyo Godfathers"},
        {"role": "assistant", "content": 'MATCH (x1 {name: "Tokyo Godfathers"})-[r1:`directed_by`]-'
                                         '(x2) RETURN DISTINCT x2.name AS name'}]
    answers = _records(out / "answer.jsonl")
    assert set(answers[2]["messages"][1]["content"].split("|")) == {
        "Tokyo Godfathers", "Perfect Blue", "Millennium Actress", "Paprika"}
    assert json.loads((out / "summary.json").read_text())["kept"] == 3


def test_export_from_jsonl_with_limit(movies, tmp_path, capsys, minilm):
    qa = tmp_path / "qa.jsonl"
    rows = [{"question": "Who directed Tokyo Godfathers?", "answers": ["Satoshi Kon"]},
            {"question": "Where was Satoshi Kon born?", "answers": ["Sapporo"],
             "entities": ["Satoshi Kon"]},
            {"question": "Who directed Rashomon?", "answers": ["Akira Kurosawa"]}]
    qa.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert [p.entities for p in read_qa_pairs(qa)] == [(), ("Satoshi Kon",), ()]
    assert len(read_qa_pairs(qa, limit=2, seed=1)) == 2
    out = tmp_path / "out"
    assert cli.main(["graphraft", "export-training-data", movies, str(qa), str(out),
                     "--no-progress",
                     "--limit", "3"]) == 0
    labels = [r["messages"][1]["content"] for r in _records(out / "selector.jsonl")]
    # questions without entities are linked from their n-grams (no LLM)
    assert labels[0].startswith('MATCH (x1 {name: "Tokyo Godfathers"})-[r1:`directed_by`]')
    assert labels[1].startswith('MATCH (x1 {name: "Satoshi Kon"})-[r1:`born_in`]')
    assert labels[2].startswith('MATCH (x1 {name: "Rashomon"})-[r1:`directed_by`]')


def test_export_bad_input_is_a_one_line_error(movies, tmp_path, capsys):
    qa = tmp_path / "bad.txt"
    qa.write_text("a question without answers\n", encoding="utf-8")
    status = cli.main(["graphraft", "export-training-data", movies, str(qa), str(tmp_path / "o")])
    assert status == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert "bad.txt:1:" in err and "MetaQA format" in err and "Traceback" not in err
    status = cli.main(["graphraft", "export-training-data", movies, str(tmp_path / "none.txt"),
                       str(tmp_path / "o")])
    assert status == cli.USAGE_ERROR


def test_demo_step_shows_candidates_and_label(minilm):
    from kgrag.commands.graphraft import demo_steps

    lines: list[str] = []
    run_demo(out=lines.append, steps=demo_steps())
    text = "\n".join(lines)
    assert "linked entities: ['Satoshi Kon', 'Tokyo']" in text
    assert "executable candidate queries" in text
    assert ('MATCH (x1 {name: "Satoshi Kon"})-[r1:`directed_by`]-(x2)-[r2:`set_in`]-'
            '(x3 {name: "Tokyo"})') in text
    assert "(hits 1, results 1)" in text
    assert "Tokyo Godfathers [query]" in text
