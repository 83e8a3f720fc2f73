"""Adversarial property test over every parser of untrusted text (issue 18).

Generators: deep nesting, long digit runs (beyond Python's 4,300-digit ``int()`` limit), lone
surrogates, repeated / unclosed tags, and whole 200 kB replies of the adversarial families in
``hostile_inputs.py``, alone and mixed with realistic text. Every parser must return a value or
raise a :class:`~kgrag.errors.KgragError` -- never another exception, never a hang (the
``timeout`` marks are hang guards, not timing assertions; linearity is measured in
``benchmarks/parser_linearity.py``).
"""

from __future__ import annotations

import pytest
from hostile_inputs import FAMILIES, PARSERS, PROSE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgrag.errors import KgragError

TAGS = ["entities", "answers", "answer", "paths", "opencypher", "query", "selected",
        "next-entities", "stop", "task-completion"]

nesting = st.builds(lambda o, n, inner: o[0] * n + inner + o[1] * n,
                    st.sampled_from([("[", "]"), ("{", "}"), ("(", ")"), ('{"a": [', "]}"),
                                     ("[[", "]"), ("(", "")]),
                    st.integers(50, 20000), st.sampled_from(["", "1", '"x"', "'y'"]))
digits = st.builds(lambda n, fmt: fmt.format("7" * n),
                   st.integers(4000, 6000),
                   st.sampled_from(["{}", "<query>Q{} -> P1</query>", "Q1 -> P{}", "Answer: {}",
                                    "choose {}, 2", '["relation", "a", "r", "b", {}, "d"]',
                                    "[{}]", "RETURN {} AS x", "UNWIND range(1, {}) AS x RETURN x",
                                    "MATCH (n) RETURN n LIMIT {}"]))
surrogate_text = st.text(st.one_of(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
                                   st.sampled_from(list("<>[]{}()\"'\\/*-:|,\n Qa1"))),
                         max_size=200)
tags = st.builds(lambda tag, form, n, body: form.format(t=tag) * n + body,
                 st.sampled_from(TAGS),
                 st.sampled_from(["<{t}>", "<{t} ", "</{t}>", "< {t} x='1'>", "<{t}>x</{t}>"]),
                 st.integers(1, 20000), st.sampled_from(["", "FINISH", "a\nb", "<"]))
mixed = st.builds(lambda parts: "".join(parts),
                  st.lists(st.one_of(surrogate_text, st.just(PROSE), st.text(max_size=50)),
                           max_size=8))
adversarial = st.one_of(nesting, digits, surrogate_text, tags, mixed, st.text(max_size=300))


def _check_all(reply: str) -> None:
    for name, parser in PARSERS.items():
        try:
            parser(reply)
        except KgragError:
            pass
        except Exception as exc:  # noqa: BLE001 - the failure being tested for
            pytest.fail(f"{name} raised {type(exc).__name__}: {exc!s:.200} on "
                        f"{reply[:80]!r}... ({len(reply)} chars)")


@pytest.mark.timeout(300)
@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(adversarial)
def test_every_parser_gives_a_value_or_a_typed_error(reply):
    _check_all(reply)


@pytest.mark.timeout(300)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(FAMILIES)), st.sampled_from(["", PROSE, "\ud800", "<answers>"]))
def test_every_parser_on_200_kB_replies(family, prefix):
    _check_all((prefix + FAMILIES[family](200_000))[:200_000])


def test_the_registry_covers_every_method():
    prefixes = {name.split(".")[0] for name in PARSERS}
    assert {"llm", "byokg", "simgrag", "graphraft", "ultrag", "ketrag", "cypher"} <= prefixes
