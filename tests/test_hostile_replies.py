"""Regression tests for hostile LLM replies and questions (issue 18, defects 1-4).

Each test reproduces a defect that once escaped as an untyped exception or took quadratic time:
deep nesting (RecursionError), runs of unclosed tags (quadratic regexes), digit runs beyond
Python's 4,300-digit ``int()`` limit, and lone surrogates (the Rust tokenizer's TypeError).
Timings are never asserted here; the tag tests use sizes at which the old regexes took tens
of seconds, so a regression shows as a hung test (pytest-timeout) rather than a flaky number.
"""

from __future__ import annotations

import importlib.resources

import numpy as np
import pytest
from langchain_core.language_models import FakeListChatModel

from kgrag import KnowledgeGraph
from kgrag.errors import LLMOutputError
from kgrag.graph import read_triples
from kgrag.llm.parsing import (
    MAX_NESTING,
    extract_all_tags,
    extract_json_object,
    extract_tag,
    nesting_depth,
    parse_literal,
    scan_tags,
)
from kgrag.methods.byokg.parsing import parse_linker_output
from kgrag.methods.graphraft.selection import parse_choice
from kgrag.methods.simgrag import parse_pattern_reply
from kgrag.text.clean import has_lone_surrogates, replace_lone_surrogates

DEEP = '{"triples": ' + "[" * 60000 + "]" * 60000 + "}"


@pytest.fixture(scope="module")
def movies() -> KnowledgeGraph:
    return read_triples(str(importlib.resources.files("kgrag") / "data" / "movies.tsv"))


# ------------------------------------------------------------------------ 1. deep nesting
@pytest.mark.parametrize("parse", [
    lambda: parse_pattern_reply(DEEP),
    lambda: extract_json_object(DEEP),
    lambda: extract_json_object("[" * 60000 + "]" * 60000, kind=list),
    lambda: parse_literal("[" * 60000 + "]" * 60000),
    lambda: parse_literal("{" + '"a": {' * 5000 + "1" + "}" * 5001),
    lambda: parse_literal("(" * 3000 + ")" * 3000),
], ids=["pattern", "json_object", "json_list", "literal", "literal_dict", "literal_tuple"])
def test_deep_nesting_gives_a_typed_error(parse):
    with pytest.raises(LLMOutputError):
        parse()


def test_nesting_limit_is_generous_for_real_replies():
    ok = "[" * MAX_NESTING + "]" * MAX_NESTING
    assert nesting_depth(ok) == MAX_NESTING
    assert parse_literal(ok) is not None
    assert nesting_depth('["[[[", "}}}"]') == 1  # brackets inside strings do not count


def test_simgrag_retriever_with_a_deeply_nested_reply_raises_typed(movies, minilm):
    from langchain_kgrag import SimGRAGRetriever

    llm = FakeListChatModel(responses=[DEEP] * 4)
    retriever = SimGRAGRetriever.from_graph(movies, llm=llm, embedder=minilm)
    with pytest.raises(LLMOutputError):
        retriever.invoke("Who directed Paprika?")


# ------------------------------------------------------------------------ 2. tags, linear scan
@pytest.mark.timeout(10)  # a hang guard: the old regexes took 13-27 s on each of these
@pytest.mark.parametrize("reply", ["<entities>" * 20000, "<entities " * 20000,
                                   "<answers>" * 20000, "</answers>" * 20000, "<" * 200000,
                                   "<a " * 60000 + ">"])
def test_runs_of_unclosed_tags_parse_quickly(reply):
    out = parse_linker_output(reply)
    assert out.paths == [] and out.query == ""
    extract_tag(reply, "answers")


def test_tag_scanner_semantics():
    text = "<Answers a='1'>x</answers> < answers >y</ answers > <answer>z"
    assert extract_all_tags(text, "answers") == ["x", "y"]
    assert extract_all_tags(text, "answer") == ["z"]  # unclosed: runs to the end
    assert extract_all_tags("<a>one <b>two</b>", "a") == ["one"]  # to the next tag
    assert extract_all_tags("<a>x <a>y</a>", "a") == ["x <a>y"]  # first open to first close
    assert extract_all_tags("</a> no open", "a") == []
    assert [t.name for t in scan_tags("<task-completion>FINISH</task-completion>")] == [
        "task-completion", "task-completion"]
    assert extract_tag("<entities>\nA\nB", "entities") == "A\nB"


# ------------------------------------------------------------------------ 3. long digit runs
def test_parse_choice_with_a_5000_digit_number_is_typed():
    with pytest.raises(LLMOutputError):
        parse_choice("1" * 5000, 5, 2)
    assert parse_choice("1" * 5000 + " then 2, 05", 5, 2) == [1, 4]


def test_graphraft_with_a_long_digit_reply_is_typed(movies, minilm):
    from langchain_kgrag import GraphRAFTRetriever

    llm = FakeListChatModel(responses=["Paprika", "7" * 5000] * 4)
    retriever = GraphRAFTRetriever.from_graph(movies, llm=llm, embedder=minilm)
    # no candidate number after the re-ask: the typed error (on_unusable_reply="raise"), not
    # the untyped ValueError of int() on 5,000 digits
    with pytest.raises(LLMOutputError, match="no valid candidate number"):
        retriever.invoke("Who directed Paprika?")


def test_ultrag_with_a_5000_digit_entity_id_is_typed(movies):
    from kgrag.methods.ultrag import UltRAG

    reply = "<query>Q" + "1" * 5000 + " -> P1</query>"
    method = UltRAG(movies, llm=FakeListChatModel(responses=[reply] * 4), linking="exact",
                    arbitrator="margin")
    with pytest.raises(LLMOutputError, match="invalid query"):  # on_unusable_reply="raise"
        method.retrieve("Who directed Paprika?")
    method.on_unusable_reply = "empty"
    result = method.retrieve("Who directed Paprika?")
    assert result.items == [] and "invalid query" in result.metadata["error"]


# ------------------------------------------------------------------------ 4. lone surrogates
def test_surrogate_helper_keeps_length():
    text = "Paprika\ud800 and \udfff"
    clean = replace_lone_surrogates(text)
    assert len(clean) == len(text) and not has_lone_surrogates(clean)
    clean.encode("utf-8")
    assert replace_lone_surrogates("plain é 😀") == "plain é 😀"


def test_surrogates_reach_neither_tokenizer_nor_embedder(minilm):
    from kgrag.text.tokens import default_tokenizer

    tok = default_tokenizer()
    text = "Who directed Paprika\ud800?"
    spans = tok.token_spans(text)
    assert spans.shape[1] == 2 and tok.count(text) == len(spans)
    assert tok.count_many([text, "ok"])[0] == len(spans)
    vec = minilm.embed_query(text)
    assert np.isfinite(vec).all()
    assert minilm.embed_documents([text, "\udc00"]).shape[0] == 2


def test_byokg_question_and_reply_with_surrogates(movies, minilm):
    from langchain_kgrag import ByoKGRetriever

    assert ByoKGRetriever.from_graph(movies, embedder=minilm).invoke("Who directed Paprika\ud800?")
    llm = FakeListChatModel(responses=["<entities>Paprika\ud800</entities>"
                                       "<answers>Satoshi\udc00</answers>"] * 6)
    docs = ByoKGRetriever.from_graph(movies, llm=llm, embedder=minilm).invoke("Paprika\ud800?")
    assert all(not has_lone_surrogates(d.page_content) for d in docs)


def test_graphraft_with_surrogates(movies, minilm):
    from langchain_kgrag import GraphRAFTRetriever

    llm = FakeListChatModel(responses=["Paprika\ud800", "1"] * 4)
    retriever = GraphRAFTRetriever.from_graph(movies, llm=llm, embedder=minilm)
    assert retriever.invoke("Who directed Paprika\ud800?") is not None


def test_ketrag_indexes_text_with_surrogates():
    from ketrag_fakes import HashingEmbedder

    from kgrag.methods.ketrag import KETRAG

    docs = ["Bruno Keller was born in Ostbruck\ud800. He moved to Lindau.",
            "Ostbruck is a town\udfff in the north."]
    method = KETRAG.from_documents(docs, embedder=HashingEmbedder(), budget=0)
    assert method.retrieve("Where was Bruno Keller born\ud800?").items


def test_ketrag_record_with_a_huge_integer_strength_is_clamped():
    """Found by the adversarial hypothesis test: float() of a 4,000-digit int overflowed."""
    from kgrag.methods.ketrag.parsing import parse_record_line

    record = parse_record_line('["relation", "a", "r", "b", ' + "7" * 4000 + ', "d"]')
    assert record.strength == 10.0
    record = parse_record_line('["relation", "a", "r", "b", -' + "7" * 4000 + ', "d"]')
    assert record.strength == 1.0


# ------------------------------------------------------------------------ issue 30, item 9
def _open_pattern(unknown_relations: bool = True) -> list[tuple[str, str, str]]:
    """A valid 12-triple chain from one named film through 12 UNKNOWN nodes (and relations):
    it held SimGRAG's search for its whole 30 s time limit on the bundled graph."""
    return [("Tokyo Godfathers" if i == 0 else f"UNKNOWN thing {i}",
             f"UNKNOWN relation {i + 1}" if unknown_relations else "directed by",
             f"UNKNOWN thing {i + 1}") for i in range(12)]


def test_an_open_pattern_reply_is_refused_up_front_and_the_reason_fed_back(minilm):
    from llm_fakes import ScriptedLlamaLLM

    from kgrag.data import demo_data_path
    from kgrag.methods.simgrag import PatternBudgetError, SimGRAG

    kg = read_triples(demo_data_path())
    assert kg.num_nodes == 198
    reply = repr({"divided": ["a"], "triples": _open_pattern()})
    llm = ScriptedLlamaLLM(replies=[reply] * 2, prompts=[])
    method = SimGRAG(kg, llm=llm, embedder=minilm, time_limit=30.0)
    with pytest.raises(LLMOutputError, match="12 UNKNOWN nodes; at most 4"):
        method.retrieve("Tell me everything about Tokyo Godfathers")
    assert len(llm.prompts) == 2 and "12 UNKNOWN nodes; at most 4" in llm.prompts[1]
    # a pattern written by code gets the typed error; known relations do not lift the limit
    for pattern in (_open_pattern(), _open_pattern(unknown_relations=False)):
        with pytest.raises(PatternBudgetError, match="UNKNOWN nodes"):
            method.retrieve_pattern(pattern)
    with pytest.raises(PatternBudgetError, match="4 triples with an UNKNOWN relation"):
        method.retrieve_pattern([("Tokyo Godfathers", f"UNKNOWN relation {i}",
                                  f"Thing {i}") for i in range(4)])
    # within the budget the search runs; the limits are config fields (None lifts one)
    within = [("Tokyo Godfathers", "UNKNOWN relation 1", "UNKNOWN person 1"),
              ("UNKNOWN person 1", "born in", "UNKNOWN place 1")]
    assert method.retrieve_pattern(within).metadata["complete"]
    from kgrag.methods.simgrag import Pattern
    from kgrag.methods.simgrag.config import SimGRAGConfig

    assert len(Pattern.from_triples(_open_pattern(), max_unknown_nodes=None,
                                    max_unknown_relations=None).triples) == 12
    assert SimGRAGConfig(max_unknown_nodes=None).max_unknown_nodes is None
