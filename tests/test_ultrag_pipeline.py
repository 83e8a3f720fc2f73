"""UltRAG pipeline with scripted LLMs: two calls, re-asks, prompts, arbitration, Eq. 2 linking."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from langchain_core.language_models import FakeListChatModel

from kgrag import KnowledgeGraph
from kgrag.embed import LookupEmbedder
from kgrag.errors import LLMNotConfiguredError, LLMOutputError
from kgrag.linking import EntityLinker
from kgrag.methods.ultrag import (
    MarginArbitrator,
    SoftmaxLeafLinker,
    UltRAG,
    eq2_probabilities,
    extract_query_text,
    parse_answers,
)
from kgrag.methods.ultrag.linking import distance_probabilities
from kgrag.methods.ultrag.prompts import arbitration_prompt


@pytest.fixture(autouse=True)
def _symbolic_executor_by_default(monkeypatch):
    """These tests pin the crisp scores of the symbolic executor (memberships exactly 1.0,
    hand-checked answer sets); the neural executor, UltRAG's default, is tested in
    test_ultrag_neural.py / test_ultrag_executors.py. Explicit ``executor=`` arguments win."""
    from kgrag.methods.ultrag import pipeline

    monkeypatch.setattr(pipeline, "DEFAULT_EXECUTOR", "symbolic")


def fan_graph(n: int = 60) -> KnowledgeGraph:
    """``hub -member-> m0..m{n-1}``, plus a second relation and a described relation."""
    triples = [("hub", "member", f"m{i:02d}") for i in range(n)]
    triples += [("m00", "likes", "m01"), ("m02", "likes", "m01")]
    return KnowledgeGraph.from_triples(
        triples, relation_descriptions={"likes": "the head is fond of the tail"})


def ids(kg, *names):
    return [f"Q{kg.node_index[n]}" for n in names]


# ------------------------------------------------------------------ case 11: two-call pipeline
def test_two_llm_calls_fifty_documents_and_parsed_answers():
    kg = fan_graph()
    hub = ids(kg, "hub")[0]
    member = f"P{kg.relation_index['member']}"
    llm = FakeListChatModel(responses=[f"<query>{hub} -> {member}</query>", "Q7, Q9"])
    method = UltRAG(kg, llm=llm, linking="exact")
    answer = method.answer("Which members does the hub have?")
    assert answer.usage.calls == 2
    retrieval = answer.retrieval
    assert len(retrieval.items) == 50
    assert retrieval.metadata["query"] == f"{hub} -> {member}"
    assert retrieval.metadata["support_size"] == 60
    assert retrieval.usage.calls == 1
    # crisp ties are ordered by node id
    assert [e.name for e in retrieval.items[:3]] == ["m00", "m01", "m02"]
    assert answer.answers == [kg.node_names[7], kg.node_names[9]]
    assert answer.text == f"{kg.node_names[7]}, {kg.node_names[9]}"


def test_async_answer_makes_the_same_two_calls():
    kg = fan_graph(5)
    llm = FakeListChatModel(responses=[f"{ids(kg, 'hub')[0]} -> member",
                                       "<answers>\nm03\nnot-a-node\n</answers>"])
    method = UltRAG(kg, llm=llm, linking="exact")
    answer = asyncio.run(method.aanswer("q"))
    assert answer.usage.calls == 2
    assert answer.answers == ["m03", "not-a-node"]  # free text is kept (the LLM's own answer)


def test_bounded_reask_on_unparsable_or_unknown_relation():
    kg = fan_graph(5)
    hub = ids(kg, "hub")[0]
    llm = FakeListChatModel(responses=["AND(", f"<query>{hub} -> P99</query>",
                                       f"<query>{hub} -> member</query>"])
    method = UltRAG(kg, llm=llm, linking="exact", max_reasks=2, arbitrator="margin")
    result = method.retrieve("q")
    assert result.usage.calls == 3
    assert len(result.items) == 5 and "error" not in result.metadata


def test_invalid_query_after_all_reasks_raises_or_gives_an_empty_result():
    kg = fan_graph(5)
    llm = FakeListChatModel(responses=["hub", "AND(hub -> member)"])
    method = UltRAG(kg, llm=llm, linking="exact", max_reasks=1, on_unusable_reply="empty")
    result = method.retrieve("q")
    assert result.items == [] and result.usage.calls == 2
    assert "AND needs at least two operands" in result.metadata["error"]
    answer = UltRAG(kg, llm=FakeListChatModel(responses=["x"] * 4), linking="exact",
                    max_reasks=1, on_unusable_reply="empty").answer("q")
    assert answer.answers == [] and answer.usage.calls == 2  # no arbitration call
    strict = UltRAG(kg, llm=FakeListChatModel(responses=["nope", "nope"]), linking="exact")
    with pytest.raises(LLMOutputError):  # the default, on_unusable_reply="raise"
        strict.retrieve("q")


def test_seed_entities_are_listed_and_usable():
    kg = fan_graph(5)
    llm = FakeListChatModel(responses=[f"{ids(kg, 'm00')[0]} -> likes", "m01"])
    method = UltRAG(kg, llm=llm, linking="exact")
    prompt = method.query_prompt("Whom does m00 like?", seeds=["m00"])
    assert f"{ids(kg, 'm00')[0]}: m00" in prompt
    answer = method.answer("Whom does m00 like?", seeds=["m00"])
    assert [e.name for e in answer.retrieval.items] == ["m01"] and answer.answers == ["m01"]


def test_no_llm_means_execute_only():
    kg = fan_graph(5)
    method = UltRAG(kg, linking="exact")
    with pytest.raises(LLMNotConfiguredError, match="execute"):
        method.retrieve("q")
    assert isinstance(method.arbitrator, MarginArbitrator)
    assert [e.name for e in method.execute("m00 -> likes")] == ["m01"]
    with pytest.raises(LLMNotConfiguredError):
        UltRAG(kg, arbitrator="llm")


def test_extract_query_text_from_messy_replies():
    assert extract_query_text("Sure!\n```\nQ1 -> P2\n```") == "Q1 -> P2"
    assert extract_query_text("<query> AND(Q1 -> P1, Q2 -> P2) </query>") == \
        "AND(Q1 -> P1, Q2 -> P2)"
    assert extract_query_text("Query: Q3 -> P1_inv") == "Q3 -> P1_inv"


# ------------------------------------------------------------------ case 14: relation list
def test_query_prompt_lists_every_relation_id_with_its_label():
    kg = fan_graph(3)
    prompt = UltRAG(kg, linking="exact").query_prompt("Who is a member?")
    for rel, name in enumerate(kg.relation_names):
        assert f"P{rel}: {name}" in prompt
    assert "the head is fond of the tail" in prompt
    assert "Who is a member?" in prompt and "<query>" in prompt
    assert "Seed entities" not in prompt  # no seeds: the LLM writes quoted mentions


def test_wikidata_style_ids_are_used_as_they_are():
    kg = KnowledgeGraph.from_triples([("Q42", "P69", "Q691283"), ("Q1", "P31", "Q5")])
    method = UltRAG(kg, linking="exact")
    prompt = method.query_prompt("q")
    assert "P69: P69" in prompt and "P0:" not in prompt
    assert [e.name for e in method.execute("Q42 -> P69")] == ["Q691283"]
    assert method.execute("Q691283 -> P69_inv")[0].metadata["entity_id"] == "Q42"


# ---------------------------------------------------------- case 12: arbitration formatting
def test_arbitration_prompt_lists_top_50_sorted_with_deterministic_ties():
    kg = KnowledgeGraph.from_triples(
        [("s", "r", f"n{i:02d}") for i in range(70)] + [("t", "r", "n05"), ("t", "r", "n60")])
    seen = []

    class Recorder:
        def arbitrate(self, question, query_text, candidates):
            seen.append(arbitration_prompt(question, query_text, candidates))
            return [candidates[0][1]]

    method = UltRAG(kg, linking="exact", arbitrator=Recorder(), projection="sum")
    retrieval = method.run("OR(s -> r, t -> r)")
    items = method.ranked(retrieval.scores)
    assert len(items) == 50
    # n05 and n60 are reached from both s and t (OR: 1 + 1 - 1 = 1); all others 1 as well
    prompt = arbitration_prompt("q", "OR(s -> r, t -> r)", method.candidates(
        type("R", (), {"items": items})()))
    lines = [ln for ln in prompt.splitlines() if ln[:1].isdigit()]
    assert len(lines) == 50
    assert lines[0].startswith("1. Q") and lines[0].endswith("| 1.000")
    first_ids = [int(ln.split(". Q")[1].split(" ")[0]) for ln in lines]
    assert first_ids == sorted(first_ids)  # equal scores: ascending node id

    fuzzy = KnowledgeGraph.from_triples([("a", "r", "x"), ("b", "r", "y"), ("a", "r", "z")])
    m = UltRAG(fuzzy, linking="exact")
    x = np.zeros(fuzzy.num_nodes, np.float32)
    x[[fuzzy.node_index["x"], fuzzy.node_index["y"], fuzzy.node_index["z"]]] = [0.2, 0.9, 0.2]
    ranked = m.ranked(x)
    assert [(e.name, e.score) for e in ranked] == [("y", pytest.approx(0.9)),
                                                   ("x", pytest.approx(0.2)),
                                                   ("z", pytest.approx(0.2))]


def test_parse_answers_maps_ids_names_and_commas():
    cands = [("Q1", "Washington, D.C.", 0.9), ("Q2", "Paris", 0.5), ("Q3", "Rome", 0.1)]
    assert parse_answers("<answers>\nWashington, D.C.\n- Q2\n</answers>", cands) == [
        "Washington, D.C.", "Paris"]
    assert parse_answers("Q3, Q2, Q99", cands) == ["Rome", "Paris"]
    assert parse_answers("1. Q2 | Paris | 0.500", cands) == ["Paris"]
    assert parse_answers("<answers></answers>", cands) == []
    assert parse_answers("<answers>none</answers>", cands) == []


def test_margin_arbitrator():
    cands = [("Q1", "a", 0.9), ("Q2", "b", 0.88), ("Q3", "c", 0.5), ("Q4", "d", 0.4)]
    assert MarginArbitrator(margin=0.05).arbitrate("q", "", cands) == ["a", "b"]
    assert MarginArbitrator(margin=0.0).arbitrate("q", "", cands) == ["a"]
    assert MarginArbitrator(margin=0.0, threshold=0.45).arbitrate("q", "", cands) == [
        "a", "b", "c"]
    assert MarginArbitrator().arbitrate("q", "", [("Q1", "a", 0.0)]) == []


# ------------------------------------------------------------------ case 8: Eq. 2 softmax
def test_eq2_probabilities_by_hand():
    cos = np.array([1.0, 0.8, 0.0])  # d^2 = 0, 0.4, 2
    p = eq2_probabilities(cos, sigma=0.1)
    assert p.sum() == pytest.approx(1.0)
    assert p[0] > 0.999999  # the exact match dominates at sigma = 0.1
    wide = eq2_probabilities(cos, sigma=1.0)
    w = np.exp(-np.array([0.0, 0.4, 2.0]) / 2.0)
    assert wide == pytest.approx(w / w.sum())  # sigma controls sharpness
    assert wide[1] > p[1]
    assert distance_probabilities(np.sqrt([0.0, 0.4, 2.0]), 1.0) == pytest.approx(wide)
    with pytest.raises(ValueError):
        eq2_probabilities(cos, sigma=0)


def test_softmax_leaf_linker_with_hand_set_2d_embeddings():
    kg = KnowledgeGraph.from_triples([("Ada", "knows", "Bob"), ("Ava", "knows", "Bob")])
    table = {"Ada": [1.0, 0.0], "Ava": [0.8, 0.6], "Bob": [0.0, 1.0], "ada lovelace": [1.0, 0.0],
             "somebody": [0.9, 0.3]}
    emb = LookupEmbedder(table)
    linker = SoftmaxLeafLinker(kg, embedder=emb, k=3, sigma=0.5)
    [(x, scored)] = linker.fuzzy_sets(["somebody"])
    assert x.sum() == pytest.approx(1.0, abs=1e-6)
    names = [e.name for e in scored]
    assert names[0] in ("Ada", "Ava") and set(names) == {"Ada", "Ava", "Bob"}
    cos = np.array([emb.embed_query("somebody") @ emb.embed_query(n) for n in names])
    assert [e.score for e in scored] == pytest.approx(eq2_probabilities(cos, 0.5).tolist(),
                                                      abs=1e-6)
    sharp = SoftmaxLeafLinker(kg, embedder=emb, k=3, sigma=0.1)
    [(_, exact)] = sharp.fuzzy_sets(["ada lovelace"])
    assert exact[0].name == "Ada" and exact[0].score > 0.99


def test_entity_linking_mode_pipeline_with_quoted_mentions():
    kg = KnowledgeGraph.from_triples([("Ada", "knows", "Bob"), ("Ava", "knows", "Cy")])
    emb = LookupEmbedder({"Ada": [1.0, 0.0], "Ava": [0.0, 1.0], "Bob": [-1, 0.2],
                          "Cy": [-1, -0.2], "Countess Ada": [0.95, 0.05]})
    llm = FakeListChatModel(responses=['<query>"Countess Ada" -> P0</query>', "Bob"])
    method = UltRAG(kg, llm=llm, embedder=emb, link_top_k=2)
    answer = method.answer("Whom does the countess know?")
    assert answer.usage.calls == 2
    items = answer.retrieval.items
    assert items[0].name == "Bob" and items[0].score > 0.99
    leaf = answer.retrieval.metadata["leaves"][0]
    assert leaf[0][0] == "Ada" and sum(p for _, p in leaf) == pytest.approx(1.0, abs=1e-5)
    assert answer.answers == ["Bob"]


@pytest.mark.slow
def test_real_minilm_links_a_paraphrased_mention(minilm):
    kg = KnowledgeGraph.from_triples([
        ("Geoffrey Hinton", "works_at", "University of Toronto"),
        ("Yann LeCun", "works_at", "New York University"),
        ("Geoffrey Hinton", "won", "Turing Award"), ("Yann LeCun", "won", "Turing Award")])
    method = UltRAG(kg, embedder=minilm, linker=EntityLinker.from_graph(
        kg, embedder=minilm, mode="dense"))
    found = method.execute('"Geoff Hinton" -> works_at')
    assert found[0].name == "University of Toronto" and found[0].score > 0.5
    exact = method.execute('"Yann LeCun" -> works_at')
    assert exact[0].name == "New York University" and exact[0].score > 0.99


def test_decider_rounds_requery_when_the_answer_set_is_empty():
    kg = fan_graph(5)
    hub = ids(kg, "hub")[0]
    llm = FakeListChatModel(responses=["m03 -> likes", f"{hub} -> member", "unused"])
    prompts = []
    method = UltRAG(kg, llm=llm, linking="exact", max_rounds=3, arbitrator="margin")
    original = method.llm.complete

    def recording(prompt, system=None):
        prompts.append(prompt)
        return original(prompt, system=system)

    method.llm.complete = recording  # type: ignore[method-assign]
    result = method.retrieve("q")
    assert result.usage.calls == 2 and result.metadata["rounds"] == 2
    assert len(result.items) == 5
    assert "m03 -> likes" in prompts[1] and "returned no entities" in prompts[1]
    single = UltRAG(kg, llm=FakeListChatModel(responses=["m03 -> likes"]), linking="exact")
    empty = single.retrieve("q")  # UltRAG-OTS: one round, an empty result is returned as is
    assert empty.items == [] and empty.usage.calls == 1 and "error" not in empty.metadata


# ------------------------------------------------- case 15: relation back-off (extension, off)
def test_relation_backoff_is_off_by_default_and_recovers_a_mislabelled_relation():
    kg = KnowledgeGraph.from_triples([
        ("Paprika", "directed_by", "Satoshi Kon"), ("Paprika", "release_year", "2006"),
        ("Akira", "directed_by", "Katsuhiro Otomo"), ("Akira", "written_by", "Izo Hashimoto")])
    from kgrag.methods.ultrag import QueryResolutionError

    with pytest.raises(QueryResolutionError, match="director"):
        UltRAG(kg, linking="exact").execute('"Paprika" -> director')
    lenient = UltRAG(kg, linking="exact", relation_backoff=80)
    assert [e.name for e in lenient.execute('"Paprika" -> director')] == ["Satoshi Kon"]
    assert [e.name for e in lenient.execute('"Satoshi Kon" -> "directed"_inv')] == ["Paprika"]
    with pytest.raises(QueryResolutionError):
        lenient.execute('"Paprika" -> P99')  # an id out of range is not guessed
    with pytest.raises(QueryResolutionError):
        lenient.execute('"Paprika" -> budget')  # nothing close enough
    llm = FakeListChatModel(responses=['"Akira" -> writer'])
    result = UltRAG(kg, llm=llm, linking="exact", relation_backoff=80).retrieve("Who wrote it?")
    assert [e.name for e in result.items] == ["Izo Hashimoto"]
    assert result.metadata["relation_backoff"] == {"writer": "written_by"}
    assert result.usage.calls == 1  # accepted without a re-ask
