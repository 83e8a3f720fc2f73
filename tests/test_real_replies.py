"""Raw replies of a real small model (SmolLM2-135M-Instruct, greedy, kgrag's own prompts)
replayed through every step's parser, with the outcome decided by reading each reply.

``tests/data/llm_replies/<method>__<step>.json`` holds up to 20 replies per LLM step, kept by
``benchmarks/real_llm_e2e.py --fixtures`` from the end-to-end runs (docs/results.md, "A real
model end to end"). Each entry's ``expect`` was written by a person reading the reply:
``"usable"`` -- a reader sees the intended answer in it (so the parser must return something,
and ``"has"`` lists items the parsed value must contain) -- or ``"junk"`` -- nothing a reader
would act on (so the parser must refuse it, :class:`~kgrag.errors.LLMOutputError`, or return
nothing). A parser that accepted junk would let a weak model steer retrieval with noise; one
that refused a readable reply would waste a re-ask and fall back for nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from kgrag.errors import LLMOutputError

FIXTURES = Path(__file__).parent / "data" / "llm_replies"


def _byokg_linker(reply: str) -> list[str]:
    from kgrag.methods.byokg.parsing import parse_linker_reply
    from kgrag.methods.byokg.prompts import linker_instructions

    # the default prompt's instructions, first iteration and later ones
    instructions = "\n".join(linker_instructions(has_context=c, with_query=True)
                             for c in (False, True))
    out = parse_linker_reply(reply, instructions=instructions)
    return [*out.entities, *out.paths, *out.answers] + ([out.query] if out.query else [])


def _byokg_next(reply: str) -> list[str]:
    from kgrag.methods.byokg.parsing import parse_next_entities

    entities, finish = parse_next_entities(reply)
    return entities + (["FINISH"] if finish else [])


def _byokg_relations(reply: str) -> list[str]:
    # the candidates were the prompt's; any relation-shaped item written in the tag counts here
    from kgrag.methods.byokg.parsing import tagged_items

    return tagged_items(reply, "selected", aliases=("select",))


def _byokg_answer(reply: str) -> list[str]:
    from kgrag.llm.steps import require_text
    from kgrag.methods.byokg.parsing import parse_answers

    return parse_answers(require_text(reply)) or [require_text(reply).strip()]


def _graphraft_entities(reply: str, question: str) -> list[str]:
    from kgrag.methods.graphraft.pipeline import parse_entity_reply

    return parse_entity_reply(reply, question=question)


def _graphraft_select(reply: str) -> list[str]:
    from kgrag.methods.graphraft.selection import parse_choice

    return [str(i + 1) for i in parse_choice(reply, 100, 5)]


def _simgrag_pattern(reply: str) -> list[str]:
    from kgrag.methods.simgrag.pattern import parse_pattern_reply

    return [" ".join(t) for t in parse_pattern_reply(reply).triples]


def _ultrag_query(reply: str) -> list[str]:
    from kgrag.errors import KgragError
    from kgrag.methods.ultrag.pipeline import extract_query_text
    from kgrag.methods.ultrag.query import parse_query

    text = extract_query_text(reply)
    try:
        parse_query(text)
    except KgragError as exc:
        raise LLMOutputError(str(exc)) from exc
    return [text]


def _grounded_answer(method: str, entry: dict[str, Any]) -> list[str]:
    """The method's own answer parsing, then the grounding check that
    ``on_unusable_reply="fallback"`` applies (:func:`kgrag.llm.grounding.ground_answer`),
    against the entry's recorded context (its LLM-free retrieval: ``context_names`` as
    entities, ``context_text`` as a passage)."""
    from kgrag.context.types import Answer, Chunk, RetrievalResult, ScoredEntity
    from kgrag.llm.grounding import ground_answer
    from kgrag.llm.steps import require_text

    question, reply = entry["question"], require_text(entry["reply"])
    items: list[Any] = [ScoredEntity(name, 1.0) for name in entry.get("context_names", ())]
    if entry.get("context_text"):
        items.append(Chunk(entry["context_text"]))
    result = RetrievalResult(question, items, metadata={"answer_reply": reply})
    if method == "graphraft":
        from kgrag.methods.graphraft.pipeline import GraphRAFT

        answer = GraphRAFT._answer(question, result, reply)
    elif method == "ketrag":
        from kgrag.methods.ketrag.pipeline import parse_answer

        text, answers = parse_answer(reply)
        answer = Answer(question, answers, text, result)
    else:
        from kgrag.methods.byokg.parsing import parse_answers

        answers = parse_answers(reply)
        answer = Answer(question, answers, ", ".join(answers) or reply, result)
    return ground_answer(question, result, answer, candidates=entry.get("candidates")).answers


def _text_answer(reply: str) -> list[str]:
    from kgrag.llm.steps import require_text

    return [require_text(reply).strip()]


PARSERS: dict[str, Callable[[str], list[str]]] = {
    "byokg__kg_linker": _byokg_linker,
    "byokg__select_relations": _byokg_relations,
    "byokg__select_entities": _byokg_next,
    "byokg__answer": _byokg_answer,  # read with GROUNDED below when the entry has a context
    "graphraft__entities": _graphraft_entities,
    "graphraft__select": _graphraft_select,
    "graphraft__answer": _text_answer,
    "simgrag__pattern": _simgrag_pattern,
    "simgrag__answer": _text_answer,
    "ultrag__query": _ultrag_query,
    "ultrag__answer": _text_answer,
    "ketrag__answer": _text_answer,
}


#: Answer steps of methods with an LLM-free mode, read as ``on_unusable_reply="fallback"``
#: reads them: the method's parse, then the grounding check against the entry's context
#: (``benchmarks/real_llm_e2e.py --fixture-contexts`` recorded it). A reply naming nothing
#: retrieved ("The Evening Star is a celestial phenomenon ...") is refused; a prose reply
#: naming a retrieved entity answers that entity. ``expect_grounded`` is the reader's
#: judgement given the context where it differs from ``expect`` (the reply alone: a film
#: the retrieval never produced is a hallucination, not an answer); ``grounding_limit`` marks
#: junk the check still takes because it names a candidate in passing ("a British actor"),
#: a strict xfail: the check reads names, not the role a sentence gives them.
GROUNDED = {"byokg__answer", "graphraft__answer", "ketrag__answer"}


#: steps whose parser reads the reply against the question
NEEDS_QUESTION = {"graphraft__entities"}


def _cases() -> list[Any]:
    cases = []
    for path in sorted(FIXTURES.glob("*.json")):
        for i, entry in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            if "expect" not in entry:
                continue
            marks = ([pytest.mark.xfail(strict=True, reason=entry["grounding_limit"])]
                     if path.stem in GROUNDED and "grounding_limit" in entry else [])
            cases.append(pytest.param(path.stem, entry, id=f"{path.stem}[{i}]", marks=marks))
    return cases


CASES = _cases()


def test_fixtures_cover_steps_with_parsers():
    stems = {path.stem for path in FIXTURES.glob("*.json")}
    assert stems, "no raw-reply fixtures"
    assert stems <= set(PARSERS), stems - set(PARSERS)
    for path in FIXTURES.glob("*.json"):
        entries = json.loads(path.read_text(encoding="utf-8"))
        assert 1 <= len(entries) <= 20 and all("expect" in e for e in entries), path.name
        if path.stem in GROUNDED:
            assert all("context_names" in e or "context_text" in e for e in entries), path.name


@pytest.mark.parametrize("step, entry", CASES)
def test_parser_outcome_matches_a_readers(step, entry):
    expect = (entry.get("expect_grounded", entry["expect"]) if step in GROUNDED
              else entry["expect"])
    try:
        parser = PARSERS[step]
        if step in GROUNDED:
            parsed = _grounded_answer(step.split("__")[0], entry)
        elif step in NEEDS_QUESTION:
            parsed = parser(entry["reply"], entry["question"])
        else:
            parsed = parser(entry["reply"])
    except LLMOutputError:
        parsed = []
    if expect == "junk":
        assert not parsed, (entry["reply"][:300], parsed)
        return
    assert expect == "usable" or isinstance(expect, dict), expect
    assert parsed, entry["reply"][:300]
    wanted = expect.get("has", []) if isinstance(expect, dict) else []
    flat = " | ".join(parsed).casefold()
    for item in wanted:
        assert item.casefold() in flat, (item, parsed)


#: KG-Linker replies of SmolLM2-135M (MetaQA 1-hop, through ChatLlamaCpp with the model's own
#: RoPE base): the prompt's task text repeated, its example tags included
KG_LINKER_ECHOES = json.loads((FIXTURES.parent / "kg_linker_echoes.json").read_text(
    encoding="utf-8"))["replies"]


@pytest.mark.parametrize("reply", KG_LINKER_ECHOES)
def test_kg_linker_replies_that_repeat_the_instructions_are_refused(reply):
    from kgrag.methods.byokg.parsing import parse_linker_reply

    parse_linker_reply(reply)  # its tags read as a reply without the instructions to compare
    with pytest.raises(LLMOutputError, match="repeats the prompt's instructions"):
        _byokg_linker(reply)
    # an answer in the tags, even one copying the question's and the context's words, is not
    assert _byokg_linker("<entities>\nThe Butterfly Effect 2\n</entities>\n<paths>\n"
                         "starred_actors\n</paths>") == ["The Butterfly Effect 2", "starred_actors"]
