"""The evaluation runner: oracles per method, scoring, resumable JSONL, the LLM mode, the CLI.

Runs on a tiny PathQuestion-format dataset written to a temporary data root (the real loaders
read it), plus KET-RAG on a tiny MuSiQue-format corpus. Embedding-based methods use the real
packaged MiniLM (session fixture).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models import FakeListChatModel

from kgrag.eval import runner as runner_module
from kgrag.eval.harness import Outcome
from kgrag.eval.runner import evaluate, read_records, score

PEOPLE = [("Alice", "Paris", "France"), ("Bob", "Berlin", "Germany"), ("Carol", "Rome", "Italy"),
          ("Dan", "Madrid", "Spain"), ("Eve", "Lisbon", "Portugal"), ("Frank", "Vienna", "Austria")]


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Single-question MiniLM calls: one intra-op thread (many threads spin on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture()
def data_root(tmp_path):
    """``pathquestion/{2H-kb.txt, PQ-2H.txt}`` and ``musique/ketrag_500`` in PQ / KET-RAG format."""
    pq = tmp_path / "pathquestion"
    pq.mkdir()
    kb = []
    for person, city, country in PEOPLE:
        kb += [f"{person}\tplace_of_birth\t{city}", f"{city}\tcountry\t{country}"]
    kb += ["Alice\tspouse\tBob", "Carol\tspouse\tDan", "Paris\tcapital_of\tFrance"]
    (pq / "2H-kb.txt").write_text("\n".join(kb) + "\n", encoding="utf-8")
    questions = [f"in which country was {p.lower()} "
                 f"born\t{c}()\t{p}#place_of_birth#{city}#country#{c}"
                 for p, city, c in PEOPLE]
    (pq / "PQ-2H.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")
    mq = tmp_path / "musique" / "ketrag_500"
    mq.mkdir(parents=True)
    qa = [{"id": f"2hop__{i}", "question": f"Which country is {city} in?", "answer": c}
          for i, (_, city, c) in enumerate(PEOPLE[:3])]
    (mq / "qa-pairs.json").write_text(json.dumps(qa), encoding="utf-8")
    (mq / "document.txt").write_text(
        "\n".join(f"{city} is a large city in {c}, known for its museums." for _, city, c in PEOPLE)
        + "\nThe weather in the mountains is cold in winter.\n", encoding="utf-8")
    return tmp_path


def lines(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_ultrag_oracle_writes_jsonl_and_summary(data_root, tmp_path):
    out = tmp_path / "out"
    summary = evaluate("ultrag", "pq-2h", mode="oracle", limit=10, out_dir=out,
                       data_root=data_root, progress=False)
    records = lines(out / "ultrag__pq-2h__oracle.jsonl")
    assert [r["id"] for r in records] == [f"PQ-2H-{i}" for i in range(1, 7)]
    assert all(r["metrics"]["hits@1"] == 1.0 and r["ranked"][0] == r["gold"][0] for r in records)
    # Q<Alice> -> P<place_of_birth> -> P<country>
    assert records[0]["extra"]["query"].endswith("-> P1")
    assert summary["evaluated"] == 6 and summary["metrics"]["hits@1"] == 100.0
    assert summary["metrics"]["answer_recall"] == 100.0 and summary["llm_calls_per_question"] == 0
    saved = json.loads((out / "ultrag__pq-2h__oracle.json").read_text())
    assert saved["markdown_row"].startswith("| ultrag | pq-2h | oracle | 6 | 100.0 |")


def test_interrupted_run_resumes_without_duplicates(data_root, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real = runner_module.build_question_runner
    calls = []

    def interrupting(*args, **kwargs):
        run = real(*args, **kwargs)

        def wrapped(ex, question):
            if len(calls) == 3:
                raise KeyboardInterrupt
            calls.append(ex.id)
            return run(ex, question)
        return wrapped

    monkeypatch.setattr(runner_module, "build_question_runner", interrupting)
    with pytest.raises(KeyboardInterrupt):
        evaluate("ultrag", "pq-2h", mode="oracle", limit=10, out_dir=out, data_root=data_root,
                 progress=False)
    jsonl = out / "ultrag__pq-2h__oracle.jsonl"
    assert [r["id"] for r in lines(jsonl)] == calls == ["PQ-2H-1", "PQ-2H-2", "PQ-2H-3"]
    with jsonl.open("a", encoding="utf-8") as fh:  # killed in the middle of writing a line
        fh.write('{"id": "PQ-2H-4", "quest')
    monkeypatch.setattr(runner_module, "build_question_runner", real)
    summary = evaluate("ultrag", "pq-2h", mode="oracle", limit=10, out_dir=out,
                       data_root=data_root, progress=False)
    ids = [r["id"] for r in lines(jsonl)]
    assert ids == [f"PQ-2H-{i}" for i in range(1, 7)] and len(set(ids)) == 6
    assert summary["evaluated"] == 6
    # a third run has nothing left to do and rebuilds the same summary from the file
    again = evaluate("ultrag", "pq-2h", mode="oracle", limit=10, out_dir=out, data_root=data_root,
                     progress=False)
    assert again["metrics"] == summary["metrics"] and len(lines(jsonl)) == 6


def test_a_rerun_with_other_params_does_not_reuse_the_records(data_root, tmp_path,
                                                              monkeypatch):
    """Issue 13's audit: --param executor=symbolic after an executor=neural run in the same
    --out reported the neural numbers (records were keyed by question id only), and
    executor=bogus 'succeeded'. Records are keyed by the run's parameters now."""
    out = tmp_path / "out"
    real = runner_module.build_question_runner
    built = []

    def recording(method, mode, resource, *, params=None, **kwargs):
        built.append(dict(params or {}))
        return real(method, mode, resource, params=params, **kwargs)

    monkeypatch.setattr(runner_module, "build_question_runner", recording)

    def run(**params):
        return evaluate("ultrag", "pq-2h", mode="oracle", limit=10, out_dir=out,
                        data_root=data_root, params=params, progress=False)

    symbolic = run(executor="symbolic", linking="exact")
    neural = run(executor="neural", linking="exact")
    assert built == [{"executor": "symbolic", "linking": "exact"},
                     {"executor": "neural", "linking": "exact"}]  # the second run ran too
    assert symbolic["jsonl"] != neural["jsonl"]
    assert len(lines(Path(symbolic["jsonl"]))) == len(lines(Path(neural["jsonl"]))) == 6
    assert json.loads((out / (Path(neural["jsonl"]).stem + ".json")).read_text())["params"] == {
        "executor": "'neural'", "linking": "'exact'"}
    # the same parameters (in any order) resume from their own records: nothing runs again
    again = run(linking="exact", executor="symbolic")
    assert len(built) == 2 and again["metrics"] == symbolic["metrics"]
    with pytest.raises(ValueError, match="bogus"):
        run(executor="bogus", linking="exact")


def test_read_records_cuts_a_torn_last_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n{"id": ', encoding="utf-8")
    assert [r["id"] for r in read_records(path)] == ["a", "b"]
    assert path.read_text(encoding="utf-8") == '{"id": "a"}\n{"id": "b"}\n'


def test_llm_mode_with_a_scripted_chat_model(data_root, tmp_path):
    replies = []
    for i, (person, _, country) in enumerate(PEOPLE):
        replies.append(f'<query>"{person}" -> place_of_birth -> country</query>')
        replies.append("Narnia" if i == 0 else country)  # the arbitrator gets one wrong
    llm = FakeListChatModel(responses=replies)
    summary = evaluate("ultrag", "pq-2h", mode="llm", llm=llm, limit=10, out_dir=tmp_path / "o",
                       data_root=data_root, params={"linking": "exact"}, progress=False)
    assert summary["llm_calls_per_question"] == 2
    assert summary["metrics"]["em"] == pytest.approx(100 * 5 / 6, abs=0.01)
    assert summary["metrics"]["hits@1"] == pytest.approx(100 * 5 / 6, abs=0.01)
    # the retrieval behind the answers found every gold country
    assert summary["metrics"]["answer_recall"] == 100.0
    jsonl = tmp_path / "o" / Path(summary["jsonl"]).name
    assert jsonl.name.startswith("ultrag__pq-2h__llm__p")  # params={"linking": "exact"}
    first = lines(jsonl)[0]
    assert first["answer"] == "Narnia" and first["metrics"]["f1"] == 0.0


def test_llm_mode_needs_an_llm(data_root, tmp_path):
    from kgrag.errors import LLMNotConfiguredError

    with pytest.raises(LLMNotConfiguredError):
        evaluate("ultrag", "pq-2h", mode="llm", limit=2, out_dir=tmp_path, data_root=data_root,
                 progress=False)


@pytest.mark.parametrize("method, dataset, mode", [
    ("simgrag", "pq-2h", "llm-free"), ("ultrag", "musique", "oracle"),
    ("ketrag", "hotpotqa", "oracle"), ("nope", "pq-2h", "oracle"), ("byokg", "pq-9h", "oracle"),
])
def test_inapplicable_pairs_are_refused(method, dataset, mode, tmp_path):
    with pytest.raises(ValueError):
        evaluate(method, dataset, mode=mode, limit=1, out_dir=tmp_path, progress=False)


@pytest.mark.parametrize("method", ["simgrag", "graphraft", "byokg"])
def test_oracle_mode_finds_the_gold_answers(method, data_root, tmp_path, minilm):
    summary = evaluate(method, "pq-2h", mode="oracle", limit=3, out_dir=tmp_path,
                       data_root=data_root, embedder=minilm, progress=False)
    assert summary["evaluated"] == 3
    assert summary["metrics"]["answer_recall"] == 100.0
    if method == "byokg":  # the scripted KG-Linker was asked (linker + agentic steps)
        assert summary["llm_calls_per_question"] >= 1 and "hits@1" not in summary["metrics"]
    else:
        assert summary["metrics"]["hits@1"] == 100.0
    if method == "graphraft":  # the gold 2-hop query was among the candidates and chosen
        for r in lines(tmp_path / "graphraft__pq-2h__oracle.jsonl"):
            assert r["extra"]["gold_query_enumerated"] and r["ranked"][0] == r["gold"][0]


def test_llm_free_modes_run_and_score(data_root, tmp_path, minilm):
    byokg = evaluate("byokg", "pq-2h", mode="llm-free", limit=3, out_dir=tmp_path,
                     data_root=data_root, embedder=minilm, progress=False)
    assert {"hits@1", "mrr", "answer_recall"} <= set(byokg["metrics"])
    assert byokg["llm_calls_per_question"] == 0
    ket = evaluate("ketrag", "musique", mode="llm-free", limit=3, out_dir=tmp_path,
                   data_root=data_root, embedder=minilm, progress=False)
    records = lines(tmp_path / "ketrag__musique__llm-free.jsonl")
    assert len(records) == 3 and all(r["context_chars"] > 0 for r in records)
    assert ket["metrics"]["answer_recall"] == 100.0  # the whole tiny corpus fits in the context
    assert "hits@1" not in ket["metrics"]


def test_byokg_fallback_scores_the_context_the_llm_free_run_scores(data_root, minilm):
    """A question whose KG-Linker reply is unusable falls back to the LLM-free retrieval; its
    context (triplets included) must count the same names in both modes."""
    from langchain_core.language_models import FakeListChatModel

    from kgrag.eval.harness import build_question_runner
    from kgrag.eval.runner import DATASETS

    spec = DATASETS["pq-2h"]
    kg, examples = spec.load_resource(data_root), spec.load_examples(data_root, 3, 0)
    junk = FakeListChatModel(responses=["The graph schema is a structured way to see things."])
    free = build_question_runner("byokg", "llm-free", kg, embedder=minilm)
    fallback = build_question_runner("byokg", "llm", kg, llm=junk, embedder=minilm,
                                     params={"on_unusable_reply": "fallback"})
    for ex in examples:
        want, got = free(ex, ex.question).context_names, fallback(ex, ex.question).context_names
        assert want and got == want, (ex.question, want ^ got)


def test_score_uses_the_ranking_the_context_and_the_answer():
    outcome = Outcome(ranked=["x", "Paris"], context_names={"Paris", "Rome"},
                      answer_text="The city of Paris")
    m = score(outcome, ("Paris", "Lyon"), k=10)
    assert m["hits@1"] == 0.0 and m["hits@10"] == 1.0 and m["mrr"] == 0.5
    assert m["answer_recall"] == 0.5
    assert m["em"] == 1.0  # "Paris" among the answers
    assert 0.0 < m["f1"] < 1.0
    text = score(Outcome(context_text="... born in Paris, France ..."), ("France",))
    assert text == {"answer_recall": 1.0}


def test_cli_runs_a_pair_and_prints_the_table(data_root, tmp_path, capsys):
    from kgrag.cli import main

    out = tmp_path / "cli"
    status = main(["eval", "--method", "ultrag", "--dataset", "pq-2h", "--limit", "4",
                   "--data-root", str(data_root), "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert status == 0
    assert "| ultrag | pq-2h | oracle | 4 | 100.0 |" in printed
    assert len(lines(out / "ultrag__pq-2h__oracle.jsonl")) == 4


@pytest.mark.parametrize("argv, message", [
    (["--method", "simgrag", "--dataset", "pq-2h", "--mode", "llm-free"], "no llm-free mode"),
    (["--method", "ketrag", "--dataset", "metaqa-1hop"], "does not apply"),
    (["--method", "ultrag", "--dataset", "pq-2h", "--mode", "llm"], "needs --llm"),
    (["--method", "ultrag", "--dataset", "pq-2h", "--param", "no-equals"], "key=value"),
    (["--method", "ultrag", "--dataset", "pq-2h", "--llm", "nomodule"], "module:factory"),
    (["--dataset", "pq-2h"], "required"),
])
def test_cli_user_errors_exit_2_with_one_line(argv, message, capsys, tmp_path):
    from kgrag.cli import main

    assert main(["eval", *argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_cli_params_are_python_literals():
    from kgrag.commands.eval import parse_params

    assert parse_params(["k=5", "injective='prefer'", "name=plain text", "flag=True"]) == {
        "k": 5, "injective": "prefer", "name": "plain text", "flag": True}


def people_qa(tmp_path: Path):
    """A user's own files: PEOPLE's birthplaces as a triples file and two questions on them
    (``kb.tsv``, ``qa.jsonl`` in ``tmp_path``), read as a dataset."""
    from kgrag.eval.runner import user_dataset

    (tmp_path / "kb.tsv").write_text("".join(f"{p}\tplace_of_birth\t{c}\n" for p, c, _ in PEOPLE),
                                     encoding="utf-8")
    (tmp_path / "qa.jsonl").write_text("".join(
        json.dumps({"id": p, "question": f"where was {p} born?", "answers": [c]}) + "\n"
        for p, c, _ in PEOPLE[:2]), encoding="utf-8")
    return user_dataset(tmp_path / "qa.jsonl", graph=tmp_path / "kb.tsv")


def test_your_own_questions_and_graph(tmp_path, capsys):
    from kgrag.cli import main

    dataset = people_qa(tmp_path)
    llm = FakeListChatModel(responses=['"Alice" -> place_of_birth', "Paris",
                                       '"Bob" -> place_of_birth', "Berlin"])
    summary = evaluate("ultrag", dataset, mode="llm", llm=llm, out_dir=tmp_path / "o",
                       params={"linking": "exact"}, progress=False)
    assert summary["dataset"] == "custom-qa" and summary["metrics"]["em"] == 100.0
    with pytest.raises(ValueError, match="oracle mode needs"):
        evaluate("ultrag", dataset, mode="oracle", out_dir=tmp_path / "o", progress=False)
    with pytest.raises(ValueError, match="needs a text dataset"):
        evaluate("ketrag", dataset, mode="llm-free", out_dir=tmp_path / "o", progress=False)
    assert main(["eval", "--method", "ultrag", "--questions", str(tmp_path / "qa.jsonl"),
                 "--out", str(tmp_path)]) == 2  # neither --graph nor --documents
    assert "exactly one of" in capsys.readouterr().err


def test_llm_mode_scores_an_unusable_reply_as_a_miss(tmp_path):
    from kgrag.errors import LLMOutputError
    from kgrag.eval.runner import run_stem

    dataset = people_qa(tmp_path)
    exact = {"linking": "exact"}
    # the first question's query reply stays unreadable after the re-ask; the run goes on
    llm = FakeListChatModel(responses=["no idea", "still no idea", '"Bob" -> place_of_birth',
                                       "Berlin"])
    summary = evaluate("ultrag", dataset, mode="llm", llm=llm, out_dir=tmp_path / "o",
                       params=exact, progress=False)
    assert summary["questions"] == 2 and summary["metrics"]["em"] == 50.0
    # the policy's eval default is not part of the run's key
    assert Path(summary["jsonl"]).stem == run_stem("ultrag", "custom-qa", "llm", exact, 10)
    first = json.loads(Path(summary["jsonl"]).read_text(encoding="utf-8").splitlines()[0])
    assert "No answer" in json.dumps(first)
    with pytest.raises(LLMOutputError):  # asked for, the policy stops the run
        evaluate("ultrag", dataset, mode="llm", llm=FakeListChatModel(responses=["no idea"]),
                 out_dir=tmp_path / "o2", params={**exact, "on_unusable_reply": "raise"},
                 progress=False)


def test_llm_mode_with_a_llama_index_llm_counts_tokens(data_root, tmp_path):
    from llm_fakes import ScriptedLlamaLLM

    replies = []
    for person, _, country in PEOPLE:
        replies += [f'"{person}" -> place_of_birth -> country', country]
    summary = evaluate("ultrag", "pq-2h", mode="llm",
                       llm=ScriptedLlamaLLM(replies=replies,
                                            usage={"prompt_tokens": 7, "completion_tokens": 3}),
                       limit=10,
                       out_dir=tmp_path, data_root=data_root, params={"linking": "exact"},
                       progress=False)
    assert summary["metrics"]["em"] == 100.0 and summary["llm_calls_per_question"] == 2
    assert summary["tokens_per_question"] == 20.0


def test_eval_embedder_caches_whole_name_lists_on_disk(tmp_path):
    import numpy as np

    from kgrag.eval.embedding import EvalEmbedder

    class Counting:
        name = "counting"
        dimension = 2

        def __init__(self):
            self.calls = []

        def embed_documents(self, texts):
            self.calls.append(list(texts))
            return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    names = [f"name {i}" for i in range(6)]
    inner = Counting()
    first = EvalEmbedder(inner, tmp_path, min_cached=4)
    first.embed_documents(names[:2])            # small list: embedded, remembered
    first.embed_documents(names[:1])            # remembered: no call
    first.embed_documents(names)                # a whole list: embedded as is, stored on disk
    assert inner.calls == [names[:2], names]
    second = EvalEmbedder(inner, tmp_path, min_cached=4)
    second.embed_documents(names[3:4])
    assert np.allclose(second.embed_documents(names), first.embed_documents(names))
    assert inner.calls == [names[:2], names, names[3:4]]  # the whole list came from disk


def test_data_root_lookup_says_where_it_looked(monkeypatch, tmp_path, capsys):
    from kgrag.eval import runner

    monkeypatch.chdir(tmp_path)  # no ../shared/data from here
    monkeypatch.delenv("KGRAG_DATA", raising=False)
    beside_checkout = runner.data_root_candidates()[-1][1]
    if beside_checkout.is_dir():  # a checkout with its datasets: found without any setting
        assert runner.default_data_root() == beside_checkout
    monkeypatch.setenv("KGRAG_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match=r"KGRAG_DATA.*--data-root"):
        runner.default_data_root()
    from kgrag.cli import main

    status = main(["eval", "--method", "ultrag", "--dataset", "pq-2h", "--limit", "1",
                   "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and "kgrag eval: error:" in err and str(tmp_path / "missing") in err
    status = main(["eval", "--method", "ultrag", "--dataset", "pq-2h", "--limit", "1",
                   "--data-root", str(tmp_path / "nowhere"), "--no-progress"])
    assert status == 2 and "nowhere" in capsys.readouterr().err
