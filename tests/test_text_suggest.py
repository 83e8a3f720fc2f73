"""``did you mean`` suggestions in the errors about unknown names."""

from __future__ import annotations

import pytest

from kgrag import KnowledgeGraph
from kgrag.errors import UnknownNodeError, UnknownRelationError
from kgrag.text.suggest import close_matches, did_you_mean

TRIPLES = [("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
           ("Paprika", "directed_by", "Satoshi Kon"),
           ("Paprika", "written_by", "Yasutaka Tsutsui")]


def test_close_matches_rank_the_nearest_first_and_drop_far_ones():
    assert close_matches("directed_bye", ["written_by", "directed_by", "starred_actors"])[0] == \
        "directed_by"
    assert close_matches("zzzz", ["directed_by", "written_by"]) == []
    assert did_you_mean("zzzz", ["directed_by"]) == ""
    assert did_you_mean("", ["directed_by"]) == ""
    assert did_you_mean("Paprica", ["Paprika", "Perfect Blue"]) == "; did you mean 'Paprika'?"


def test_graph_lookup_errors_suggest_the_known_names():
    kg = KnowledgeGraph.from_triples(TRIPLES)
    with pytest.raises(UnknownRelationError, match="did you mean 'directed_by'"):
        kg.relation_id("directed by")
    with pytest.raises(UnknownNodeError, match="did you mean 'Tokyo Godfathers'"):
        kg.node_id("Tokio Godfathers")
    with pytest.raises(UnknownNodeError, match="did you mean 'Paprika'"):
        kg.node_ids(["Paprica"], missing="raise")


def test_ultrag_dsl_errors_suggest_relations_and_entities():
    from kgrag.methods.ultrag.pipeline import UltRAG
    from kgrag.methods.ultrag.query import QueryResolutionError

    method = UltRAG(KnowledgeGraph.from_triples(TRIPLES), linking="exact")
    with pytest.raises(QueryResolutionError, match="did you mean 'directed_by'"):
        method.execute('"Paprika" -> directd_by')
    with pytest.raises(QueryResolutionError, match="did you mean 'Paprika'"):
        method.execute('"Paprikka" -> directed_by')



def test_suggestions_are_computed_only_when_the_message_is_read(monkeypatch):
    import kgrag.text.suggest as suggest

    calls = []
    real = suggest.did_you_mean
    monkeypatch.setattr(suggest, "did_you_mean", lambda *a, **k: calls.append(a) or real(*a, **k))
    kg = KnowledgeGraph.from_triples(TRIPLES)
    for _ in range(3):
        with pytest.raises(UnknownNodeError) as caught:
            kg.node_id("Paprica")
    assert calls == []  # caught and dropped: no fuzzy search
    assert "did you mean 'Paprika'" in str(caught.value) and len(calls) == 1
    str(caught.value)
    assert len(calls) == 1  # computed once per error
