"""Property tests of the read-only Cypher check (no server needed; see test_graph_db.py for the
list of concrete attacks run against a real database)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kgrag.errors import UnsafeQueryError
from kgrag.graph.cypher.safety import (
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
    # a dotted name right before '(' reads as a namespaced call (refused by design), and more
    # than MAX_NESTING_DEPTH unclosed '[1,' is refused as too deep
    assume(not any(a in ("n.name", "m.name") and b.startswith("(")
                   for a, b in zip(tokens, tokens[1:])))
    assume(tokens.count("[1,") <= 8)
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
    assume(not any(a in ("n.name", "m.name") and b.startswith("(")  # a namespaced call
                   for a, b in zip(tokens, tokens[1:])))
    assume(tokens.count("[1,") <= 8)
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
from kgrag.graph.cypher.safety import code_tokens, tokenize_cypher  # noqa: E402


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


# ------------------------------------------------------------------ issue 30: positions, not
# neighbours
from kgrag.errors import QueryBudgetError  # noqa: E402
from kgrag.graph.cypher.budget import prepare_untrusted_query  # noqa: E402
from kgrag.graph.cypher.safety import MAX_NESTING_DEPTH, nesting_depth, word_roles  # noqa: E402


@pytest.mark.parametrize("query", [
    "WITH 1 AS as CREATE (:Pwned)",
    "MATCH (n) WITH n AS as SET as.pwned = true",
    "MATCH (n) WITH n AS as SET as:Pwned",
    "MATCH (n) WITH n AS as SET as += {pwned: 1}",
    "MATCH (n) WITH n AS as REMOVE as.name",
    "MATCH ()-[r]->() WITH r AS as DELETE as",
    "WITH 1 AS as MERGE (:Pwned)",
    "WITH 1 AS as CALL `db.idx.fulltext.drop`('Entity')",
    "MATCH (as) WITH as SET as.pwned = 1",  # `as` a variable: the next word is a clause
    "WITH 1 AS as, 2 AS set CREATE (:Pwned)",
    "WITH 1 AS CREATE (:Pwned)",  # an alias spelled like a keyword must end the item
])
def test_the_word_after_an_alias_is_a_clause_again(query):
    with pytest.raises(UnsafeQueryError, match="keyword|alias"):
        check_read_only(query)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["as", "AS", "set", "start", "x", "`as`", "use"]), keyword, casing,
       st.sampled_from([" ", "\n", " /* c */ ", " // c\n"]))
def test_a_keyword_after_any_alias_is_refused(alias, word, case, gap):
    with pytest.raises(UnsafeQueryError):
        check_read_only(f"MATCH (n) WITH n AS {alias}{gap}{case(word)} (m)")


def test_word_roles():
    code = code_tokens(tokenize_cypher("WITH n AS as SET as.set = 1 RETURN x AS start"))
    roles = {(t.text, t.start): r for t, r in zip(code, word_roles(code)) if r}
    assert roles[("as", 10)] == "alias" and roles[("SET", 13)] == "keyword"
    assert roles[("set", 20)] == "keyword"  # after `as.`: `as` is the keyword AS, not an operand
    assert roles[("start", 40)] == "alias"
    code = code_tokens(tokenize_cypher("RETURN n.set AS s, 1.SET"))
    assert [r for t, r in zip(code, word_roles(code)) if t.text.upper() == "SET"] == \
        ["property", "keyword"]


@pytest.mark.parametrize("query", [
    "MATCH (n) RETURN n LIMIT 1CREATE (:Pwned)", "RETURN $1CREATE", "RETURN 0x1MERGE (:Pwned)",
    "RETURN 1e5SET", "RETURN 0o7DELETE", "RETURN 1.5REMOVE", "RETURN 1_000CREATE", "RETURN $ x",
])
def test_numbers_and_parameters_glued_to_words_are_refused(query):
    with pytest.raises(UnsafeQueryError):
        check_read_only(query)


@pytest.mark.parametrize("query, texts", [
    ("RETURN 0x1F, 0o17, 1.5e-3, 1_000, 12", ["RETURN", "0x1F", ",", "0o17", ",", "1.5e-3", ",",
                                              "1_000", ",", "12"]),
    ("MATCH p = ()-[*1..3]->() RETURN $1, $p, $`a``b`", None),
    ("RETURN [0..2]", ["RETURN", "[", "0", ".", ".", "2", "]"]),
])
def test_number_and_parameter_forms(query, texts):
    tokens = code_tokens(tokenize_cypher(query))
    if texts is not None:
        assert [t.text for t in tokens] == texts
    assert is_read_only(query)
    assert "$`a``b`" in [t.text for t in tokens] or texts is not None


@pytest.mark.parametrize("query", [
    "MATCH (n) \u0421REATE (:Pwned)",  # Cyrillic Es
    "MATCH (n) D\u0395LETE n",  # Greek Epsilon
    "MATCH (n) CRE\u034fATE (:Pwned)",  # combining grapheme joiner
    "MATCH (n) DE\u2060LETE n",  # word joiner
    "MATCH (n) CREATE\ufe0f (:Pwned)",  # variation selector
    "MATCH (n) \u115fDELETE n",  # Hangul filler (a default-ignorable letter)
    "MATCH (n)\u00a0RETURN n",  # no-break space outside a string
    "MATCH (n:\u0415ntity) RETURN n",  # a homoglyph in a label
])
def test_non_ascii_outside_literals_is_refused(query):
    with pytest.raises(UnsafeQueryError, match="non-ASCII|invisible"):
        check_read_only(query)


def test_non_ascii_inside_literals_names_and_comments_is_data():
    for query in ("MATCH (n:`\u0421ущность`) RETURN n.`имя` AS x",
                  "MATCH (n) WHERE n.name = 'CRE\u034fATE \u0421' RETURN n // \u0421REATE",
                  "RETURN 1 AS x /* \u03b5 */"):
        assert check_read_only(query) == query


@pytest.mark.parametrize("query", [
    "RETURN `range`(1, 50000000) AS x", "RETURN `db.idx.fulltext.drop`('Entity') AS x",
    "RETURN `apoc`.version() AS x", "RETURN apoc . text . join(['a'], ',') AS x",
    "RETURN date.truncate('day', date()) AS x", "RETURN n.apoc.version() AS x",
    "CALL `db.idx.fulltext.drop`('Entity')", "CALL db.labels()",
])
def test_quoted_and_namespaced_calls_are_refused(query):
    with pytest.raises(UnsafeQueryError):
        check_read_only(query)
    assert is_read_only("RETURN vector.similarity.cosine([1.0], [1.0]) AS s, point.distance("
                        "point({x: 0, y: 0}), point({x: 1, y: 1})) AS d")


@pytest.mark.parametrize("function", ["date", "datetime", "localdatetime", "localtime", "time",
                                      "duration", "DATE", "Date"])
def test_temporal_functions_are_refused_for_falkordb_bolt_only(function):
    query = f"MATCH (n) RETURN n.name AS name, {function} /* c */ () AS t"
    with pytest.raises(UnsafeQueryError, match="Bolt endpoint cannot return temporal"):
        check_read_only(query, backend="falkordb-bolt")
    with pytest.raises(UnsafeQueryError, match="temporal"):
        prepare_untrusted_query(query, backend="falkordb-bolt")
    for backend in (None, "neo4j", "falkordb"):
        assert check_read_only(query, backend=backend) == query
    assert is_read_only("MATCH (date) RETURN date.year AS y, n.date AS d",
                        backend="falkordb-bolt")  # names, not calls


@pytest.mark.parametrize("query, depth", [
    ("RETURN 1", 0), ("RETURN f(x)", 1), ("RETURN NOT (NOT (x))", 4), ("RETURN - - - 1", 3),
    ("RETURN 1 - -1", 1), ("MATCH (a)-[r]->(b)<--(c) RETURN a", 3),
    ("RETURN CASE WHEN a THEN CASE WHEN b THEN [1] END END", 3),
    ("MATCH (n) WHERE NOT n.a AND NOT n.b AND NOT n.c RETURN n", 1),
])
def test_nesting_depth(query, depth):
    assert nesting_depth(code_tokens(tokenize_cypher(query))) == depth


@pytest.mark.parametrize("build", [
    lambda d: "RETURN " + "(" * d + "1" + ")" * d + " AS x",
    lambda d: "RETURN " + "[" * d + "1" + "]" * d + " AS x",
    lambda d: "RETURN " + "{a: " * d + "1" + "}" * d + " AS x",
    lambda d: "RETURN " + "abs(" * d + "1" + ")" * d + " AS x",
    lambda d: "RETURN " + "NOT " * d + "true AS x",
    lambda d: "RETURN " + "- " * d + "1 AS x",
    lambda d: "RETURN " + "CASE WHEN true THEN " * d + "1" + " END" * d + " AS x",
])
def test_nesting_above_the_cap_is_refused_and_at_the_cap_accepted(build):
    assert is_read_only(build(MAX_NESTING_DEPTH - 1))
    with pytest.raises(QueryBudgetError, match="nested"):
        check_read_only(build(MAX_NESTING_DEPTH + 1))
    with pytest.raises(QueryBudgetError, match="nested"):
        check_read_only(build(40))


L800 = "[" + ", ".join(str(i) for i in range(800)) + "]"


@pytest.mark.parametrize("query, reason", [
    (f"WITH {L800} AS L RETURN size([a IN L | size([b IN L | size([c IN L | 1])])]) AS s",
     "unknown size"),
    ("MATCH (n) WITH collect(n) AS L RETURN size([a IN L | size([b IN L | 1])]) AS s",
     "unknown size"),
    ("MATCH (n) WITH collect(n.name) AS L RETURN size([a IN L WHERE a IN L]) AS s",
     "unknown size"),
    ("MATCH (n) WITH collect(n) AS L RETURN any(a IN L WHERE all(b IN L WHERE a = b)) AS s",
     "unknown size"),
    ("MATCH (n) WITH collect(n) AS L RETURN [a IN L | [(a)--(b) | b.name]] AS s",
     "unknown size"),
    (f"RETURN size([a IN {L800} | size([b IN {L800} | 1])]) AS s", "640,000 elements"),
    ("RETURN [a IN [1] | [b IN [1] | [c IN [1] | [d IN [1] | 1]]]] AS x", "4 iterations"),
    ("RETURN size([x IN range(1, 100000) | '" + "a" * 500 + "']) AS s", "characters of"),
    ("RETURN size(replace(replace('aaaa', 'a', 'aaaa'), 'a', 'aaaa')) AS s", "nested"),
    ("RETURN size(replace('" + "a" * 1000 + "', 'a', '" + "b" * 1000 + "')) AS s", "fold"),
    ("MATCH (n) RETURN size(replace(n.name, '', 'xx')) AS s", "empty search"),
    ("MATCH (n) RETURN size(replace(n.name, 'a', n.name)) AS s", "computed replacement"),
    ("RETURN size([" + ", ".join("0" for _ in range(1500)) + "]) AS s", "1,500 elements"),
    ("MATCH (n) WITH collect(n) AS L, collect(n.name) AS M RETURN size([a IN L | M]) AS s",
     "copy of M"),
    ("MATCH (n) WITH collect(n) AS L RETURN size([x IN range(1, 100000) WHERE x IN L]) AS s",
     "100,000 listed or ranged"),
    ("MATCH (n) WITH collect(n) AS L RETURN size([x IN range(1, 5000) | L]) AS s",
     "5,000 listed or ranged"),
])
def test_expression_work_is_bounded(query, reason):
    with pytest.raises(QueryBudgetError, match=reason):
        prepare_untrusted_query(query)


@pytest.mark.parametrize("query", [
    "MATCH p = (a)-[*1..3]->(b) RETURN [n IN nodes(p) | n.name] AS names",
    "MATCH p = (a)-->(b) WHERE any(n IN nodes(p) WHERE n.name IN ['a', 'b']) RETURN p",
    "MATCH (n) WHERE n.name IN ['Paprika', 'Satoshi Kon'] RETURN n.name AS name",
    "MATCH (n) RETURN [(n)-->(m) | m.name] AS out, [r IN [1, 2] | [s IN [3] | r * s]] AS g",
    "MATCH (n) RETURN replace(n.name, '_', ' ') AS name, replace(n.name, $a, $b) AS other",
    "RETURN size([x IN range(1, 1000) | x * 2]) AS s",
    "MATCH (n) WITH collect(n.name) AS L RETURN [a IN L WHERE a STARTS WITH 'P'] AS p",
    "MATCH p = (a)-->(b) RETURN [r IN relationships(p) | type(r)] AS t, "
    "[n IN nodes(p) | CASE WHEN n.x THEN true ELSE null END] AS c",
    "MATCH (n) RETURN [(n)-[r]->(m) | [type(r), m.name]] AS out",
    "MATCH (n) WITH collect(n) AS L RETURN [x IN [1, 2, 3] | [y IN L | y.name]] AS s",
    "MATCH (n) WITH collect(n) AS L, 3 AS k RETURN [a IN L | size(k)] AS s",
])
def test_ordinary_expressions_stay_within_the_budget(query):
    assert prepare_untrusted_query(query, {"a": "x", "b": "yy"}).endswith(" LIMIT 101")


def test_a_list_parameter_has_a_known_size():
    """GraphRAFT's template counts hits with ``t.name IN $gold`` inside a comprehension over a
    collected list: one unknown size (the list) times the parameter's length."""
    query = ("MATCH (n)-->(m) WITH collect(m) AS found "
             "RETURN size([t IN found WHERE t.name IN $gold]) AS hits")
    assert prepare_untrusted_query(query, {"gold": ["a", "b"]}).endswith(" LIMIT 101")
    with pytest.raises(QueryBudgetError, match="unknown size"):
        prepare_untrusted_query(query, {"gold": "not a list"})


def test_many_sibling_expressions_under_the_depth_cap_are_bounded_together():
    """Each sibling is parsed the same way, so 30 chains 10 deep cost 30 times one chain."""
    from kgrag.graph.cypher.safety import MAX_PARSE_WORK, parse_work

    chain = "(" * MAX_NESTING_DEPTH + "1" + ")" * MAX_NESTING_DEPTH
    one = f"RETURN {chain} AS x"
    assert parse_work(code_tokens(tokenize_cypher(one))) == 2 ** (MAX_NESTING_DEPTH + 1) - 2
    assert is_read_only(one)
    fits = MAX_PARSE_WORK // parse_work(code_tokens(tokenize_cypher(one)))
    assert fits >= 2 and is_read_only("RETURN " + " + ".join([chain] * fits) + " AS x")
    with pytest.raises(QueryBudgetError, match="parse work"):
        check_read_only("RETURN " + " + ".join([chain] * (fits + 1)) + " AS x")
    with pytest.raises(QueryBudgetError, match="parse work"):
        check_read_only("RETURN " + " + ".join([chain] * 30) + " AS x")
    flat = "RETURN [" + ", ".join(f"{{a: [{i}, 'x']}}" for i in range(300)) + "] AS x"
    assert is_read_only(flat)  # a long but shallow literal stays well within the budget
