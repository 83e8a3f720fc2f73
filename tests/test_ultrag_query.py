"""UltRAG query language: DSL and BetaE tuple parsers, one AST, typed errors (notes §5, 1-3)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag.errors import KgragError
from kgrag.methods.ultrag.query import (
    MAX_DEPTH,
    Entity,
    Intersection,
    Negation,
    Projection,
    QueryError,
    QueryStructureError,
    QuerySyntaxError,
    Relation,
    Union_,
    depth,
    leaves,
    parse_query,
    postfix,
    to_dsl,
    to_tuple_text,
)

FIG1 = Projection(
    Intersection((Projection(Entity("Q1"), Relation("P1", True)),
                  Projection(Entity("Q2"), Relation("P2", True)))),
    Relation("P4"))


# ------------------------------------------------------------------- test case 1: DSL round trip
def test_dsl_parses_the_figure_1_query_into_the_expected_ast():
    assert parse_query("AND(Q1 -> P1_inv, Q2 -> P2_inv) -> P4") == FIG1
    assert to_dsl(FIG1) == "AND(Q1 -> P1_inv, Q2 -> P2_inv) -> P4"


def test_projection_chains_are_left_associative():
    q = parse_query("Q1 -> P1 -> P2")
    assert q == Projection(Projection(Entity("Q1"), Relation("P1")), Relation("P2"))
    assert depth(q) == 2


def test_three_ary_and_and_whitespace_tolerated():
    q = parse_query("  AND (\n Q1->P1 ,Q2  ->  P2,\tQ3 -> P3_inv )->P4  ")
    assert isinstance(q, Projection) and isinstance(q.operand, Intersection)
    assert len(q.operand.operands) == 3
    assert [e.text for e in leaves(q)] == ["Q1", "Q2", "Q3"]


def test_quoted_mentions_names_and_quoted_relations():
    q = parse_query('AND("Turing Award" -> won_inv, Deep_Learning -> "field of work"_inv) -> P4')
    assert leaves(q) == [Entity("Turing Award", True), Entity("Deep_Learning", False)]
    inner = q.operand.operands[1]
    assert inner.relation == Relation("field of work", True)
    assert parse_query(to_dsl(q)) == q


def test_quoted_relation_ending_in_inv_is_literal():
    q = parse_query('Q1 -> "parent_inv"')
    assert q.relation == Relation("parent_inv", False)
    assert parse_query(to_dsl(q)) == q


def test_grouping_parentheses_and_unicode_arrow():
    assert parse_query("(Q1 -> P1) → P2") == parse_query("Q1 -> P1 -> P2")
    assert parse_query("(AND(Q1 -> P1, Q2 -> P2)) -> P3") == parse_query(
        "AND(Q1 -> P1, Q2 -> P2) -> P3")


def test_or_and_not_extension():
    q = parse_query("OR(Q1 -> P1, NOT(Q2 -> P2)) -> P3")
    assert isinstance(q.operand, Union_)
    assert isinstance(q.operand.operands[1], Negation)
    assert parse_query(to_dsl(q)) == q


def test_postfix_program_matches_the_tree():
    assert postfix(FIG1) == [("leaf", 0), ("project", Relation("P1", True)), ("leaf", 1),
                             ("project", Relation("P2", True)), ("and", 2),
                             ("project", Relation("P4"))]


# ---------------------------------------------------------------- test case 2: BetaE tuple form
def test_betae_tuple_text_gives_the_same_ast():
    assert parse_query("(((Q1, (P1_inv,)), (Q2, (P2_inv,))), (P4,))") == FIG1
    assert to_tuple_text(FIG1) == "(((Q1, (P1_inv,)), (Q2, (P2_inv,))), (P4,))"


def test_betae_python_tuples_and_chains():
    assert parse_query(((("Q1", ("P1_inv",)), ("Q2", ("P2_inv",))), ("P4",))) == FIG1
    assert parse_query("(Q1, (P1, P2))") == parse_query("Q1 -> P1 -> P2")
    # BetaE's integer convention: entity i, relation i, inverse as -i-1
    assert parse_query((5, (3, -4))) == parse_query("Q5 -> P3 -> P3_inv")


# --------------------------------------------------------------- test case 3: invalid queries
@pytest.mark.parametrize("text, error", [
    ("AND(Q1)", QueryStructureError),
    ("AND(Q1 -> P1)", QueryStructureError),
    ("AND()", QueryStructureError),
    ("Q1", QueryStructureError),
    ('"Geoffrey Hinton"', QueryStructureError),
    ("AND(Q1 -> P1, Q2)", QueryStructureError),
    ("AND(Q1 -> P1, Q2 -> P2", QuerySyntaxError),
    ("Q1 -> P1)", QuerySyntaxError),
    ("((Q1, (P1,))", QuerySyntaxError),
    ("Q1 ->", QuerySyntaxError),
    ("Q1 -> -> P2", QuerySyntaxError),
    ("Q1 P1", QueryStructureError),  # one two-word name, not projected
    ("AND Q1 -> P1", QuerySyntaxError),
    ('Q1 -> "unterminated', QuerySyntaxError),
    ("", QuerySyntaxError),
    ("   ", QuerySyntaxError),
    ("NOT(Q1 -> P1, Q2 -> P2)", QueryStructureError),
    ("((Q1, (P1,)),)", QueryStructureError),
])
def test_invalid_queries_raise_precise_typed_errors(text, error):
    with pytest.raises(error) as info:
        parse_query(text)
    assert isinstance(info.value, QueryError) and isinstance(info.value, KgragError)
    assert isinstance(info.value, ValueError)


def test_syntax_errors_carry_the_position():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("AND(Q1 -> P1, Q2 -> P2 -> ) -> P3")
    assert info.value.position == 26
    assert "position 26" in str(info.value)


def test_strict_ids_enforce_the_paper_grammar():
    assert parse_query("Q1 -> P1_inv", strict_ids=True) == parse_query("Q1 -> P1_inv")
    with pytest.raises(QuerySyntaxError, match="X9"):
        parse_query("Q1 -> X9", strict_ids=True)
    with pytest.raises(QuerySyntaxError, match="Hinton"):
        parse_query("Hinton -> P1", strict_ids=True)
    with pytest.raises(QuerySyntaxError):
        parse_query("(Q1, (X9,))", strict_ids=True)


def test_hostile_sizes_are_refused_without_recursion_errors():
    deep = "(" * (MAX_DEPTH + 5) + "Q1 -> P1" + ")" * (MAX_DEPTH + 5)
    with pytest.raises(QuerySyntaxError, match="deeper"):
        parse_query(deep)
    long_chain = "Q1" + " -> P1" * 3000
    with pytest.raises(QuerySyntaxError, match="deeper"):
        parse_query(long_chain)
    with pytest.raises(QuerySyntaxError, match="longer"):
        parse_query("Q1 -> P1" + " " * 30_000)
    with pytest.raises(QuerySyntaxError):
        parse_query(object())  # type: ignore[arg-type]


# ------------------------------------------------------------------------ property tests
@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_parser_raises_only_its_own_error_on_arbitrary_text(text):
    try:
        parse_query(text)
    except QueryError:
        pass


_ALPHABET = st.sampled_from(list("AND()->,_ Q1P2\"'→x"))


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_parser_raises_only_its_own_error_on_query_like_text(text):
    try:
        q = parse_query(text)
    except QueryError:
        return
    assert parse_query(to_dsl(q)) == q  # anything accepted round-trips


_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: s.upper() not in ("AND", "OR", "NOT") and not s.endswith(("_inv", "_inverse",
                                                                        "_reverse")))
_entities = st.one_of(st.integers(0, 99).map(lambda i: Entity(f"Q{i}")),
                      _names.map(lambda s: Entity(s)),
                      st.text(min_size=1, max_size=8).filter(lambda s: s.strip() == s and s)
                      .map(lambda s: Entity(s, True)))
_relations = st.builds(Relation, st.one_of(st.integers(0, 20).map(lambda i: f"P{i}"), _names),
                       st.booleans())


def _queries(allow_extensions: bool):
    leaf = st.builds(Projection, _entities, _relations)

    def extend(children):
        options = [st.builds(Projection, children, _relations),
                   st.lists(children, min_size=2, max_size=3).map(
                       lambda qs: Intersection(tuple(qs)))]
        if allow_extensions:
            options += [st.lists(children, min_size=2, max_size=3).map(
                lambda qs: Union_(tuple(qs))), st.builds(Negation, children)]
        return st.one_of(options)

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(_queries(allow_extensions=True))
def test_dsl_round_trip_on_random_asts(query):
    assert parse_query(to_dsl(query)) == query


@settings(max_examples=300, deadline=None)
@given(_queries(allow_extensions=False))
def test_dsl_and_tuple_forms_agree(query):
    from_tuple = parse_query(to_tuple_text(query))
    from_dsl = parse_query(to_dsl(query))
    assert from_tuple == from_dsl == query


# ------------------------------------------------ bare names as LLMs write them (issue 18, #12)
@pytest.mark.parametrize("text, expected", [
    ("Hapoel_Be'er_Sheva_FC -> is_in_country",
     Projection(Entity("Hapoel_Be'er_Sheva_FC"), Relation("is_in_country"))),
    ("Team (2014) -> coach_inv", Projection(Entity("Team (2014)", True), Relation("coach", True))),
    ("Satoshi Kon -> directed by_inv",
     Projection(Entity("Satoshi Kon", True), Relation("directed by", True))),
    ("Tom and Jerry -> directed_by", Projection(Entity("Tom and Jerry", True),
                                                Relation("directed_by"))),
    ("a -> r and b -> s", Intersection((Projection(Entity("a"), Relation("r")),
                                        Projection(Entity("b"), Relation("s"))))),
    ("a -> r OR b -> s and c -> t", Union_((
        Projection(Entity("a"), Relation("r")),
        Intersection((Projection(Entity("b"), Relation("s")),
                      Projection(Entity("c"), Relation("t"))))))),
    ("(a -> r and b -> s) -> t", Projection(Intersection((
        Projection(Entity("a"), Relation("r")), Projection(Entity("b"), Relation("s")))),
        Relation("t"))),
])
def test_bare_names_and_infix_operators(text, expected):
    query = parse_query(text)
    assert query == expected
    assert parse_query(to_dsl(query)) == query


@pytest.mark.parametrize("text", ["a -> r and b", "a and b", "Q1 -> P1 and", "'Til -> r"])
def test_bare_name_grammar_errors_stay_typed(text):
    with pytest.raises(QueryError):
        parse_query(text)


def test_ultrag_runs_a_reply_with_bare_names():
    from langchain_core.language_models import FakeListChatModel

    from kgrag import KnowledgeGraph
    from kgrag.methods.ultrag import UltRAG

    kg = KnowledgeGraph.from_triples([("Hapoel_Be'er_Sheva_FC", "is_in_country", "Israel"),
                                      ("Team (2014)", "coach", "Anna"),
                                      ("Other", "coach", "Bob")])
    replies = ["<query>Hapoel_Be'er_Sheva_FC -> is_in_country</query>",
               "<query>Team (2014) -> coach</query>"]
    method = UltRAG(kg, llm=FakeListChatModel(responses=replies), linking="exact",
                    arbitrator="margin", max_reasks=0)
    assert method.retrieve("Which country?").items[0].name == "Israel"
    assert method.retrieve("Who coached?").items[0].name == "Anna"


def test_unknown_relation_lists_candidates_and_says_what_p_ids_are():
    """Issue 29 item 5: candidates and a "did you mean", no ``(P0..P-1)`` on an empty graph,
    and P / Q numbers explained as UltRAG's own (not Wikidata ids)."""
    from kgrag import KnowledgeGraph
    from kgrag.methods.ultrag import QueryResolutionError, execute

    kg = KnowledgeGraph.from_triples([("Bob", "reports_to", "Alice"),
                                      ("Alice", "manager_of", "Bob")])
    with pytest.raises(QueryResolutionError) as err:
        execute(kg, '"Bob" -> manages', executor="symbolic")
    message = str(err.value)
    assert "did you mean 'manager_of'?" in message
    assert "reports_to (P0), manager_of (P1)" in message and "not Wikidata ids" in message
    with pytest.raises(QueryResolutionError, match="Q0..Q1 .*not Wikidata ids"):
        execute(kg, "Q7 -> reports_to", executor="symbolic")
    empty = KnowledgeGraph.from_triples([])
    with pytest.raises(QueryResolutionError) as err:
        execute(empty, '"Bob" -> manages', executor="symbolic")
    assert "has no relations" in str(err.value) and "P-1" not in str(err.value)
    wikidata = KnowledgeGraph.from_triples([("Q1", "P31", "Q5")])
    with pytest.raises(QueryResolutionError) as err:
        execute(wikidata, "Q1 -> P32", executor="symbolic")
    assert str(err.value) == "unknown relation 'P32'; this graph's 1 relation: P31"
