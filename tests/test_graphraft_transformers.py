"""Constrained decoding over a real Hugging Face causal LM (tiny, random, built from a config).

No download: the tokenizer is the packaged MiniLM's (a BERT WordPiece tokenizer whose ``[SEP]``
ends a candidate), the model a one-layer GPT-2 with random weights. The weights are meaningless;
what is tested is that decoding through ``transformers`` only ever spells a listed candidate and
that, with a beam as wide as the candidate set, its ranking is exhaustive scoring.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from kgrag import KnowledgeGraph  # noqa: E402
from kgrag.methods.graphraft.decoding import (  # noqa: E402
    TransformersTokenScorer,
    constrained_beam_search,
    exhaustive_scores,
)
from kgrag.methods.graphraft.enumeration import enumerate_candidates  # noqa: E402
from kgrag.methods.graphraft.selection import ConstrainedDecodingSelector  # noqa: E402


@pytest.fixture(scope="module")
def scorer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from kgrag.embed import default_model_path

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(default_model_path()))
    config = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=32, n_positions=512, vocab_size=len(tokenizer),
        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    # a model this small gains nothing from intra-op threads, and on a busy 2-core machine
    # their spin-waits make every forward pass ~30x slower
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield TransformersTokenScorer(model, tokenizer, prompt_template="question: {question}\nquery: ")
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def candidates():
    kg = KnowledgeGraph.from_triples([
        ("CYP3A4", "ENZYME", "Ivermectin"),
        ("Ivermectin", "INDICATION", "strongyloidiasis"),
        ("Thiabendazole", "INDICATION", "strongyloidiasis"),
        ("CYP3A4", "ENZYME", "Albendazole"),
        ("TNF", "ASSOCIATED_WITH", "melanoma"),
        ("TNFSF8", "ASSOCIATED_WITH", "melanoma"),
    ])
    cands = enumerate_candidates(kg, ["CYP3A4", "strongyloidiasis", "TNF", "TNFSF8"])
    return [c.text for c in cands]


QUESTION = "Which drug is metabolised by CYP3A4 and treats strongyloidiasis?"


def test_scorer_uses_the_tokenizers_end_marker(scorer):
    assert scorer.eos_token_id == scorer.tokenizer.sep_token_id  # BERT tokenizers have no eos
    ids = scorer.encode('MATCH (x1 {name: "TNFSF8"})')
    assert scorer.eos_token_id not in ids and scorer.tokenizer.cls_token_id not in ids


@pytest.mark.parametrize("width", [1, 3])
def test_narrow_beam_returns_distinct_members(scorer, candidates, width):
    ranked = constrained_beam_search(scorer, QUESTION, candidates, beam_width=width)
    assert len(ranked) == width
    assert len({i for i, _ in ranked}) == width
    assert all(0 <= i < len(candidates) for i, _ in ranked)
    scores = [lp for _, lp in ranked]
    assert scores == sorted(scores, reverse=True)


def test_wide_beam_equals_exhaustive_scoring(scorer, candidates):
    assert len(candidates) >= 8  # includes the prefix pair TNF / TNFSF8
    ranked = constrained_beam_search(scorer, QUESTION, candidates, beam_width=len(candidates))
    exact = exhaustive_scores(scorer, QUESTION, candidates)
    assert sorted(i for i, _ in ranked) == list(range(len(candidates)))
    assert [i for i, _ in ranked] == sorted(range(len(candidates)), key=lambda i: -exact[i])
    for i, lp in ranked:
        assert lp == pytest.approx(exact[i], abs=1e-4)


def test_batched_left_padding_matches_single_rows(scorer, candidates):
    # prefixes of different lengths scored in one padded batch == scored one at a time
    prefixes = [scorer.encode(candidates[0])[:2], scorer.encode(candidates[-1])[:7], []]
    batch = scorer.next_token_logits(QUESTION, prefixes)
    for row, prefix in zip(batch, prefixes):
        single = scorer.next_token_logits(QUESTION, [prefix])[0]
        assert abs(row - single).max() < 1e-4


def test_selector_picks_listed_candidates(scorer, candidates):
    from kgrag.methods.graphraft.enumeration import Candidate
    from kgrag.methods.graphraft.patterns import PathPattern

    cands = [Candidate(PathPattern("1hop", "CYP3A4", ("ENZYME",)), 2),
             Candidate(PathPattern("1hop", "strongyloidiasis", ("INDICATION",)), 2),
             Candidate(PathPattern("2path", "CYP3A4", ("ENZYME", "INDICATION"),
                                   target="strongyloidiasis"), 1)]
    picked = ConstrainedDecodingSelector(scorer).select(QUESTION, cands, 5)
    assert sorted(picked) == [0, 1, 2]


def test_last_position_logits_equal_full_forward(scorer, candidates):
    prefix = [scorer.encode(candidates[1])[:5]]
    assert scorer._keeps_last_logits()  # transformers >= 4.45 computes only the last position
    fast = scorer.next_token_logits(QUESTION, prefix)
    scorer._logits_to_keep = False
    try:
        full = scorer.next_token_logits(QUESTION, prefix)
    finally:
        scorer._logits_to_keep = None
    assert abs(fast - full).max() < 1e-4


def test_chat_prompt_template_reproduces_the_training_prompt(scorer):
    from kgrag.methods.graphraft.decoding import chat_prompt_template

    tokenizer = scorer.tokenizer
    saved = getattr(tokenizer, "chat_template", None)
    # the rendered prompt has literal braces of its own, which the template must escape
    tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{ {{ m['content'] }} }"
                               "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}")
    try:
        template = chat_prompt_template(tokenizer)
        question = "Which {weird} drug treats strongyloidiasis?"
        expected = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                                 tokenize=False, add_generation_prompt=True)
        assert template.format(question=question) == expected
    finally:
        tokenizer.chat_template = saved
