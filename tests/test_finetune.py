"""kgrag.finetune on a tiny randomly initialised Llama (2 layers) and a character tokenizer built
here: the LoRA loop, adapter save/reload, resume after an interruption, the compact prompts and
the constrained choice. No hub, no download; a few seconds on a CPU."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
transformers = pytest.importorskip("transformers")

from kgrag.finetune import pairs as P  # noqa: E402
from kgrag.finetune.model import (  # noqa: E402
    MANIFEST,
    CandidateScorer,
    ScoredChoiceSelector,
    encode,
    load_finetuned,
    prompt_template,
    read_manifest,
)
from kgrag.finetune.train import TrainConfig, tokenize_pairs, train_lora  # noqa: E402

PAIRS = [
    P.TrainingPair("who directed [Paprika]", '"Paprika" - directed_by'),
    P.TrainingPair("who wrote [Paprika]", '"Paprika" - written_by'),
    P.TrainingPair("who directed [Heat]", '"Heat" - directed_by'),
    P.TrainingPair("who wrote [Heat]", '"Heat" - written_by'),
]


def _tokenizer():
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(["<unk>", "<pad>", "</s>", *string.printable])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>",
                                                pad_token="<pad>", unk_token="<unk>")


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory) -> Path:
    """A 2-layer Llama with random weights and its tokenizer, saved like any HF model folder."""
    folder = tmp_path_factory.mktemp("tiny-base")
    tokenizer = _tokenizer()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _base(base_dir: Path):
    from kgrag.finetune.model import load_base

    return load_base(str(base_dir))


def _train(base_dir: Path, out: Path, steps: int = 6, **kwargs):
    model, tokenizer = _base(base_dir)
    template = prompt_template(tokenizer, P.SYSTEM["graphraft"])
    config = TrainConfig(batch_size=2, max_steps=steps, warmup_steps=1, learning_rate=5e-3,
                         checkpoint_every=1, lora_r=4, lora_alpha=8)
    report = train_lora(model, tokenizer, PAIRS, out, template=template, config=config,
                        progress=False, manifest={"base": str(base_dir), "method": "graphraft"},
                        **kwargs)
    return report, template


def _adapter_tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


def test_training_loop_learns_and_saves_an_adapter_with_its_manifest(base_dir, tmp_path):
    report, template = _train(base_dir, tmp_path / "run", steps=12)
    assert report.steps == 12 and report.examples == 24
    assert report.losses[-1] < report.losses[0]  # the targets are learnable
    manifest = read_manifest(tmp_path / "run")
    assert manifest["method"] == "graphraft" and manifest["base"] == str(base_dir)
    assert manifest["prompt_version"] == P.PROMPT_VERSIONS[manifest["method"]]
    assert manifest["prompt_template"] == template
    assert manifest["data"]["pairs"] == len(PAIRS)
    assert manifest["adapter_bytes"] > 0
    assert (tmp_path / "run" / "adapter_config.json").is_file()


def test_a_reloaded_adapter_scores_exactly_like_the_trained_model(base_dir, tmp_path):
    model, tokenizer = _base(base_dir)
    template = prompt_template(tokenizer, P.SYSTEM["graphraft"])
    config = TrainConfig(batch_size=2, max_steps=4, warmup_steps=1, learning_rate=5e-3,
                         lora_r=4, lora_alpha=8)
    from peft import PeftModel

    train_lora(model, tokenizer, PAIRS, tmp_path / "run", template=template, config=config,
               progress=False, manifest={"base": str(base_dir), "method": "graphraft"})
    trained = model  # get_peft_model wrapped the same modules in place
    reloaded, tok2, manifest = load_finetuned(tmp_path / "run")
    assert isinstance(reloaded, PeftModel)
    candidates = [p.target for p in PAIRS]
    before = CandidateScorer(trained.eval(), tokenizer,
                             template).score("who wrote [Heat]", candidates)
    after = CandidateScorer(reloaded, tok2, manifest["prompt_template"]).score(
        "who wrote [Heat]", candidates)
    assert after == pytest.approx(before, abs=1e-5)
    base_model, _ = _base(base_dir)
    untuned = CandidateScorer(base_model, tokenizer, template).score("who wrote [Heat]", candidates)
    assert untuned != pytest.approx(after, abs=1e-3)  # the adapter is really applied


def test_an_interrupted_run_resumes_from_its_checkpoint_to_the_same_adapter(base_dir, tmp_path):
    _train(base_dir, tmp_path / "straight")

    class Killed(Exception):
        pass

    def kill_at_3(step: int, loss: float) -> None:
        if step == 3:
            raise Killed

    with pytest.raises(Killed):
        _train(base_dir, tmp_path / "resumed", on_step=kill_at_3)
    assert not (tmp_path / "resumed" / MANIFEST).exists()
    state = json.loads((tmp_path / "resumed" / "checkpoint" / "state.json").read_text())
    assert state["step"] == 3
    report, _ = _train(base_dir, tmp_path / "resumed")
    assert report.resumed_from == 3 and report.steps == 6
    straight = _adapter_tensors(tmp_path / "straight")
    resumed = _adapter_tensors(tmp_path / "resumed")
    assert straight.keys() == resumed.keys()
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key


def test_a_checkpoint_of_other_data_is_refused(base_dir, tmp_path):
    _train(base_dir, tmp_path / "run", steps=2)
    model, tokenizer = _base(base_dir)
    with pytest.raises(ValueError, match="another run"):
        train_lora(model, tokenizer, PAIRS[:2], tmp_path / "run",
                   template=prompt_template(tokenizer, None),
                   config=TrainConfig(batch_size=2, max_steps=2, lora_r=4, lora_alpha=8,
                                      checkpoint_every=1, warmup_steps=1, learning_rate=5e-3),
                   progress=False)


def test_the_training_prompt_is_the_prompt_the_scorer_renders(base_dir):
    _, tokenizer = _base(base_dir)
    template = prompt_template(tokenizer, P.SYSTEM["graphraft"])
    pair = P.TrainingPair(P.compact_prompt("graphraft", "who directed [Heat]"),
                          '"Heat" - directed_by')
    (ids, n_prompt), = tokenize_pairs(tokenizer, template, [pair], max_length=512)
    assert ids[:n_prompt] == encode(tokenizer, template.format(question="who directed [Heat]"))
    assert ids[n_prompt:] == encode(tokenizer, pair.target) + [tokenizer.eos_token_id]
    assert P.compact_prompt("ultrag", "  q ") == "q"
    with pytest.raises(ValueError):
        P.compact_prompt("nope", "q")


def test_cached_scores_equal_exhaustive_scoring_and_the_constrained_beam(base_dir):
    from kgrag.methods.graphraft.decoding import (
        TransformersTokenScorer,
        constrained_beam_search,
        exhaustive_scores,
    )

    model, tokenizer = _base(base_dir)
    template = prompt_template(tokenizer, "sys")
    candidates = [p.target for p in PAIRS] + ['"Heat" - directed_by - has_genre']
    fast = CandidateScorer(model, tokenizer, template, batch_size=2).score("q?", candidates)
    token_scorer = TransformersTokenScorer(model, tokenizer, prompt_template=template)
    exact = exhaustive_scores(token_scorer, "q?", candidates)
    assert fast == pytest.approx(exact, abs=1e-4)
    beam = constrained_beam_search(token_scorer, "q?", candidates, beam_width=len(candidates))
    ranked = CandidateScorer(model, tokenizer, template).rank("q?", candidates)
    assert [i for i, _ in beam] == ranked
    scores = CandidateScorer(model, tokenizer, template).score("q?", candidates)
    lengths = [len(encode(tokenizer, c)) + 1 for c in candidates]
    per_token = CandidateScorer(model, tokenizer, template).rank("q?", candidates, per_token=True)
    assert per_token == sorted(range(len(candidates)), key=lambda i: -scores[i] / lengths[i])
    # one source: the shared '"Heat" - ' prefix runs once with the prompt; scores are unchanged
    same_source = ['"Heat" - directed_by', '"Heat" - directed_by - has_genre', '"Heat" - w']
    assert CandidateScorer(model, tokenizer, template).score("q?", same_source) == pytest.approx(
        exhaustive_scores(token_scorer, "q?", same_source), abs=1e-4)


def test_the_selector_returns_valid_candidates_in_their_compact_form(base_dir):
    from kgrag.methods.graphraft.enumeration import Candidate
    from kgrag.methods.graphraft.patterns import PathPattern

    model, tokenizer = _base(base_dir)
    cands = [Candidate(PathPattern("1hop", "Heat", ("directed_by",)), 1),
             Candidate(PathPattern("2hop", "Heat", ("directed_by", "directed_by")), 3),
             Candidate(PathPattern("2path", "Heat", ("directed_by", "written_by"), "Ann"), 1)]
    selector = ScoredChoiceSelector(CandidateScorer(model, tokenizer,
                                                    prompt_template(tokenizer, None)))
    picked = selector.select("who directed [Heat]", cands, 2)
    assert len(picked) == 2 and len(set(picked)) == 2 and set(picked) <= {0, 1, 2}
    assert selector.select("q", [], 5) == []
    texts = {P.candidate_text(c.pattern) for c in cands}
    assert '"Heat" - directed_by - written_by - "Ann"' in texts and len(texts) == 3


def test_oracle_targets_and_the_pattern_format_round_trip():
    from kgrag.eval.datasets import QAExample, metaqa_relation_path

    ex = QAExample("what genres are the films directed by [Satoshi Kon]", ("Drama",),
                   ("Satoshi Kon",), metaqa_relation_path("director_to_movie_to_genre"),
                   "director_to_movie_to_genre", id="x")
    (ultrag,) = P.oracle_pairs("ultrag", [ex], "d")
    assert ultrag.target == '"Satoshi Kon" -> directed_by_inv -> has_genre'
    from kgrag.methods.ultrag.query import parse_query

    parse_query(ultrag.target)  # UltRAG's own parser reads the target
    (simgrag,) = P.oracle_pairs("simgrag", [ex], "d")
    triples = P.parse_pattern(simgrag.target)
    assert triples == [("UNKNOWN movie 1", "director", "Satoshi Kon"),
                       ("UNKNOWN movie 1", "genre", "UNKNOWN genre 1")]
    assert P.format_pattern(triples) == simgrag.target


def test_held_out_questions_never_reach_the_training_split():
    from kgrag.eval.datasets import QAExample

    train = [QAExample("q1", ("a",), id="1"), QAExample("Q2 ", ("a",), id="2")]
    P.assert_disjoint(train, [QAExample("q3", ("a",), id="3")])
    with pytest.raises(AssertionError):
        P.assert_disjoint(train, [QAExample("q2", ("b",), id="9")])  # same text, other id
    root = Path("/work/shared/data")
    if not (root / "pathquestion" / "PQ-2H.txt").is_file():
        return
    held = P.heldout_examples("pq-2h", root)
    split = P.training_examples("pq-2h", root)
    assert len(held) == P.EVAL_LIMIT and split
    assert not {e.id for e in held} & {e.id for e in split}


def test_the_command_writes_pairs_for_a_qa_file_and_refuses_a_leaked_test_question(tmp_path):
    from kgrag.cli import main
    from kgrag.errors import KgragError

    graph = tmp_path / "kb.tsv"
    graph.write_text("Paprika\tdirected_by\tSatoshi Kon\nPaprika\thas_genre\tAnimation\n",
                     encoding="utf-8")
    train = tmp_path / "train.jsonl"
    train.write_text("\n".join(json.dumps(r) for r in [
        {"question": "who directed Paprika", "answers": ["Satoshi Kon"], "entities": ["Paprika"],
         "path": "directed_by"},
        {"question": "what genre is Paprika", "answers": ["Animation"], "entities": ["Paprika"],
         "path": "has_genre"}]) + "\n", encoding="utf-8")
    test = tmp_path / "test.jsonl"
    test.write_text(json.dumps({"question": "who directed Paprika", "answers": ["x"]}) + "\n",
                    encoding="utf-8")
    out = tmp_path / "run"
    assert main(["finetune", "--method", "ultrag", "--train", str(train), "--graph", str(graph),
                 "--out", str(out), "--pairs-only"]) == 0
    targets = sorted(p.target for p in P.read_pairs(out / "pairs.jsonl"))
    assert targets == ['"Paprika" -> directed_by', '"Paprika" -> has_genre']
    with pytest.raises((AssertionError, KgragError)):
        main(["finetune", "--method", "ultrag", "--train", str(train), "--graph", str(graph),
              "--heldout", str(test), "--out", str(tmp_path / "run2"), "--pairs-only"])
    assert main(["finetune", "--method", "graphraft", "--train", str(train), "--graph",
                 str(graph), "--out", str(tmp_path / "run3"), "--pairs-only"]) == 0
    assert {p.target for p in P.read_pairs(tmp_path / "run3" / "pairs.jsonl")} == {
        '"Paprika" - directed_by', '"Paprika" - has_genre'}
