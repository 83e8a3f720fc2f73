"""Property tests of the read-only Cypher check (no server needed; see test_graph_db.py for the
list of concrete attacks run against a real database)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgrag.errors import UnsafeQueryError
from kgrag.graph.cypher_safety import (
    FORBIDDEN_KEYWORDS,
    check_read_only,
    is_read_only,
    strip_literals_and_comments,
)

SAFE_TOKENS = ["MATCH", "(n)", "(n:Entity)", "-[r]->", "(m)", "WHERE", "n.name", "=", "$name",
               "RETURN", "m.name", "AS", "x", "LIMIT", "10", "ORDER", "BY", "count(*)", ",",
               "WITH", "DISTINCT", "OPTIONAL", "UNWIND", "[1,", "2]", "AND", "NOT", "<>"]

safe_token = st.sampled_from(SAFE_TOKENS)
# String literals hold any visible text except their own quote and backslashes (also after
# NFKC, which the check applies first: a full-width apostrophe becomes a real quote). Control
# and invisible characters are refused even inside strings, by design.
literal = st.text(st.characters(blacklist_characters="'\\", blacklist_categories=(
    "Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")), max_size=20).filter(
    lambda s: not any(c in unicodedata.normalize("NFKC", s) for c in "'\\")).map(
    lambda s: f"'{s}'")
keyword = st.sampled_from(sorted(FORBIDDEN_KEYWORDS))
casing = st.sampled_from([str.upper, str.lower, str.title])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(safe_token, literal), min_size=1, max_size=25))
def test_safe_tokens_and_any_string_literals_are_accepted(tokens):
    query = " ".join(tokens)
    assert check_read_only(query) == query.strip()  # the original text, never a normalised copy


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(safe_token, literal), max_size=15),
       st.lists(st.one_of(safe_token, literal), max_size=15), keyword, casing)
def test_a_forbidden_keyword_outside_literals_is_always_refused(before, after, word, case):
    assume(not before or before[-1] != "AS")  # ``AS start``: an alias is a name, not a clause
    query = " ".join(before + [case(word)] + after)
    with pytest.raises(UnsafeQueryError):
        check_read_only(query)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(safe_token, literal), min_size=1, max_size=10), keyword,
       st.sampled_from(["// {} \n", "/* {} */", "'{}'", '"{}"', "`{}`"]))
def test_keywords_inside_comments_strings_and_names_are_ignored(tokens, word, wrapper):
    query = " ".join(tokens) + " " + wrapper.format(word) + " RETURN 1"
    assert is_read_only(query)
    assert word not in strip_literals_and_comments(query).split()


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_never_crashes_the_check(text):
    try:
        check_read_only(text)
    except UnsafeQueryError:
        pass


# ------------------------------------------------------------- the lexer's comment / string forms
from kgrag.graph.cypher_safety import code_tokens, tokenize_cypher  # noqa: E402


@pytest.mark.parametrize("query, kinds", [
    ("RETURN 1 // c\nRETURN", ["word", "number", "comment", "word"]),
    ("RETURN 1 /* a\n* b */ x", ["word", "number", "comment", "word"]),
    ("RETURN 'a\\'b' AS x", ["word", "string", "word", "word"]),
    ('RETURN "a\\"b" AS x', ["word", "string", "word", "word"]),
    ("RETURN 'a\\\\' AS x", ["word", "string", "word", "word"]),
    ("RETURN '// no' AS x", ["word", "string", "word", "word"]),
    ("RETURN '/* no' AS x", ["word", "string", "word", "word"]),
    ("MATCH (n:`a``b`) RETURN n", ["word", "punct", "word", "punct", "name", "punct", "word",
                                   "word"]),
    ("RETURN $p, $`q r`", ["word", "param", "punct", "param"]),
])
def test_lexer_forms(query, kinds):
    assert [t.kind for t in tokenize_cypher(query)] == kinds


def test_line_comment_end_readings():
    lf_only = code_tokens(tokenize_cypher("RETURN 1 //\rX\n", line_comment_ends="\n"))
    cr_or_lf = code_tokens(tokenize_cypher("RETURN 1 //\rX\n", line_comment_ends="\r\n"))
    assert [t.text for t in lf_only] == ["RETURN", "1"]
    assert [t.text for t in cr_or_lf] == ["RETURN", "1", "X"]
    assert is_read_only("RETURN 1 // c\r\nRETURN 2")  # CRLF: the same both ways (server errs)
    assert not is_read_only("RETURN 1 //\rX")  # the readings differ: refused


@pytest.mark.parametrize("query", ["RETURN 'a", "RETURN \"a\\\"", "RETURN /* a", "MATCH (`a)"])
def test_unterminated_forms_are_refused(query):
    with pytest.raises(UnsafeQueryError, match="unterminated"):
        check_read_only(query)


def test_original_text_is_returned():
    for text in ("MATCH (n) WHERE n.name = 'Film²' RETURN n", "RETURN 'ﬁlm' AS x",
                 "RETURN 'Cafe\u0301' AS x"):
        assert check_read_only(text) == text
    assert check_read_only("RETURN 1 AS x ; // done") == "RETURN 1 AS x  // done"
