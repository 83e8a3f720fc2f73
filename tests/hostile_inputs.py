"""Every parser of untrusted text, and adversarial inputs for them (issue 18).

Shared by ``tests/test_hostile_parsers.py`` (hypothesis: every outcome is a value or a
``KgragError``) and ``benchmarks/parser_linearity.py`` (time linear in the reply size).
A parser here is a function of one string: an LLM reply, LLM-written Cypher or a DSL query.
"""

from __future__ import annotations

import random
from typing import Any, Callable

PARSERS: dict[str, Callable[[str], Any]] = {}


def _register() -> None:
    from kgrag.graph.cypher.budget import prepare_untrusted_query
    from kgrag.graph.cypher.safety import check_read_only
    from kgrag.llm import parsing as llm
    from kgrag.methods.byokg import parsing as byokg
    from kgrag.methods.graphraft.pipeline import parse_entities
    from kgrag.methods.graphraft.selection import parse_choice
    from kgrag.methods.ketrag.parsing import parse_records
    from kgrag.methods.ketrag.pipeline import parse_answer as ketrag_answer
    from kgrag.methods.simgrag.pattern import parse_pattern_reply
    from kgrag.methods.simgrag.prompts import parse_answers as simgrag_answers
    from kgrag.methods.ultrag.arbitrator import parse_answers as ultrag_answers
    from kgrag.methods.ultrag.pipeline import extract_query_text
    from kgrag.methods.ultrag.query import parse_query

    candidates = [("Q1", "Satoshi Kon", 0.9), ("Q2", "Paprika", 0.5)]
    PARSERS.update({
        "llm.extract_tag": lambda r: llm.extract_tag(r, "answers", aliases=("answer",)),
        "llm.extract_all_tags": lambda r: llm.extract_all_tags(r, "entities"),
        "llm.tag_lines": lambda r: llm.tag_lines(r, "entities"),
        "llm.split_items": lambda r: llm.split_items(r),
        "llm.parse_literal": llm.parse_literal,
        "llm.extract_json_object": lambda r: llm.extract_json_object(r),
        "llm.extract_json_list": lambda r: llm.extract_json_object(r, kind=list),
        "byokg.parse_linker_output": byokg.parse_linker_output,
        "byokg.parse_selected_relations": lambda r: byokg.parse_selected_relations(
            r, ["directed_by", "written_by", "release_year"]),
        "byokg.parse_next_entities": byokg.parse_next_entities,
        "byokg.parse_answers": byokg.parse_answers,
        "byokg.normalize_path": byokg.normalize_path,
        "byokg.strip_code_fence": byokg.strip_code_fence,
        "simgrag.parse_pattern_reply": parse_pattern_reply,
        "simgrag.parse_answers": simgrag_answers,
        "simgrag.parse_answers_fact": lambda r: simgrag_answers(r, task="fact"),
        "graphraft.parse_choice": lambda r: parse_choice(r, 20, 5),
        "graphraft.parse_entities": parse_entities,
        "ultrag.extract_query_text": extract_query_text,
        "ultrag.parse_query": lambda r: parse_query(extract_query_text(r)),
        "ultrag.parse_answers": lambda r: ultrag_answers(r, candidates),
        "ketrag.parse_records": parse_records,
        "ketrag.parse_answer": ketrag_answer,
        "cypher.check_read_only": check_read_only,
        "cypher.prepare_untrusted_query": lambda r: prepare_untrusted_query(r, max_rows=100),
    })


_register()

PROSE = ("Let me think step by step. The film <b>Paprika</b> (2006) -> directed_by -> "
         "Satoshi Kon; see {\"triples\": [[\"Paprika\", \"directed by\", \"UNKNOWN person 1\"]]}.\n"
         "<entities>\nPaprika\n- Satoshi Kon\n</entities>\n<paths>directed_by -> won</paths>\n"
         "Answer: Satoshi Kon | Madhouse\nMATCH (n {name: 'Paprika'}) RETURN n.name AS name\n"
         "[\"entity\", \"Paprika\", \"film\", \"A 2006 film.\"]\n<query>Q1 -> P1_inv</query>\n")


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def _random_specials(n: int) -> str:
    rng = random.Random(n)
    alphabet = "<>/[]{}()\"'`\\-|:;,.\n\t *#$1Qa"
    return "".join(rng.choice(alphabet) for _ in range(n))


#: Adversarial reply families: ``size -> text`` (``size`` characters).
FAMILIES: dict[str, Callable[[int], str]] = {
    "open tags": _repeat("<entities>"),
    "open tags with a space": _repeat("<entities "),
    "close tags": _repeat("</answers>"),
    "lone <": _repeat("<"),
    "nested [": _repeat("["),
    "nested {": _repeat('{"a": '),
    "nested (": _repeat("("),
    "balanced [[]]": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "digit run": _repeat("1"),
    "digit groups": _repeat("123 "),
    "spaces": _repeat(" "),
    "newlines": _repeat("\n"),
    "blank lines": _repeat(" \t\n"),
    "arrows": _repeat("->"),
    "dashes": _repeat("-"),
    "double quotes": _repeat('"'),
    "single quotes": _repeat("'"),
    "backslashes": _repeat("\\"),
    "backticks": _repeat("`"),
    "answer lines": _repeat("Answer: x\n"),
    "answer prefix": _repeat(" answer"),
    "json records": _repeat('["entity", "A", "b", "c"]\n'),
    "comment starts": _repeat("/*"),
    "line comments": _repeat("//"),
    "surrogates": _repeat("\ud800"),
    "prose": _repeat(PROSE),
    "code fences": _repeat("```"),
    "random specials": _random_specials,
}
