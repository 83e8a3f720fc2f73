"""Relation identifiers become words before they are embedded."""

import pytest

from kgrag.text.names import relation_words


@pytest.mark.parametrize("name, words", [
    ("directed_by", "directed by"),
    ("placeOfBirth", "place of birth"),
    ("film.film.directed_by", "film film directed by"),
    ("__music__recording__tracks", "music recording tracks"),
    ("P57", "p57"),
    ("_", "_"),
])
def test_relation_words(name, words):
    assert relation_words(name) == words


def test_words_rank_the_right_relation_first(minilm):
    q = minilm.embed_query("Who directed ?")
    vecs = minilm.embed_documents([relation_words("starred_actors"), relation_words("directed_by")])
    assert float(vecs[1] @ q) > float(vecs[0] @ q)
