"""The answer-grounding check (kgrag.llm.grounding) and where the methods apply it: only under
``on_unusable_reply="fallback"``, so a strong model's answers under the default policy are
never rewritten."""

from __future__ import annotations

import pytest

from kgrag.context.types import Answer, Chunk, Path, RetrievalResult, ScoredEntity, Subgraph, Triple
from kgrag.errors import LLMOutputError
from kgrag.llm.grounding import (
    ground_answer,
    grounded_in_passages,
    is_yes_no,
    item_names,
    names_in_reply,
)


def test_names_in_reply_reads_whole_phrases_longest_first_in_reply_order():
    names = ["Dream", "The Dream Team", "Team", "Keaton", "Michael Keaton", "The", "Up"]
    reply = "Michael Keaton starred; The Dream-Team (1989) is a comedy. Dreamers, up!"
    # "Up" is all stopwords: never an answer by name (the film is lost, "up" is not invented)
    assert names_in_reply(reply, names) == ["Michael Keaton", "The Dream Team"]


def test_names_the_question_mentions_are_not_answers():
    reply = "Stephen Furst is an actor; he acted in The Dream Team."
    assert names_in_reply(reply, ["Stephen Furst", "The Dream Team"],
                          question="what does [Stephen Furst] act in") == ["The Dream Team"]


def test_item_names_cover_every_item_kind_in_rank_order():
    items = [Triple("Paprika", "directed_by", "Satoshi Kon"), ScoredEntity("Anime", 0.5),
             Chunk("e1|Tokyo|city", "e1", 1.0, {"entity": "Tokyo"}), Chunk("free text"),
             Path(("Satoshi Kon", "Sapporo", "Japan"), ("born_in", "located_in")),
             Subgraph((Triple("Perfect Blue", "directed_by", "Satoshi Kon"),))]
    assert item_names(items) == ["Paprika", "Satoshi Kon", "Anime", "Tokyo", "Sapporo",
                                 "Japan", "Perfect Blue"]


def test_passage_grounding_needs_two_content_words_or_a_number_from_the_text():
    text = "Arthur's Magazine (1844-1846) was an American literary periodical."
    assert grounded_in_passages("An American literary periodical.", text)
    assert grounded_in_passages("In 1844.", text)
    assert not grounded_in_passages("A magazine.", text)
    assert not grounded_in_passages("Arthur's Magazine",  # the question's own words
                                    text, question="When did Arthur's Magazine start?")


def test_yes_no_only_for_yes_no_questions():
    assert is_yes_no("Are both bands from Canada?", "Yes, both are.") == "yes"
    assert is_yes_no("Which band is from Canada?", "No idea") is None
    assert is_yes_no("can you name a film directed by Satoshi Kon", "No pattern") is None


def _result(question, items, reply):
    return RetrievalResult(question, items, metadata={"answer_reply": reply})


def test_ground_answer_keeps_grounded_answers_and_reads_names_out_of_prose():
    q = "who directed Paprika"
    items = [ScoredEntity("Satoshi Kon", 1.0), ScoredEntity("Paprika", 0.5)]
    kept = Answer(q, ["Satoshi Kon"], "Satoshi Kon", _result(q, items, "Satoshi Kon"))
    assert ground_answer(q, kept.retrieval, kept) is kept
    prose = "It was a film by Satoshi Kon, released in 2006."
    read = ground_answer(q, _result(q, items, prose), Answer(q, [], prose, None))
    assert read.answers == ["Satoshi Kon"] and read.text == prose


def test_ground_answer_refuses_a_reply_that_names_nothing_retrieved():
    q = "who directed Paprika"
    result = _result(q, [ScoredEntity("Satoshi Kon", 1.0)], "Guillermo del Toro")
    with pytest.raises(LLMOutputError, match="names none of"):
        ground_answer(q, result, Answer(q, ["Guillermo del Toro"], "Guillermo del Toro", result))


def test_candidates_restrict_what_an_answer_may_be():
    q = "who acted in Trippin'"
    items = [Triple("Trippin'", "starred_actors", "Donald Faison"),
             Triple("The World's Greatest Lover", "has_genre", "Comedy")]
    reply = "The World's Greatest Lover is a classic film."
    result = _result(q, items, reply)
    assert ground_answer(q, result, Answer(q, [], reply, result)).answers == [
        "The World's Greatest Lover"]
    with pytest.raises(LLMOutputError):
        ground_answer(q, result, Answer(q, [], reply, result), candidates=["Donald Faison"])


@pytest.fixture(scope="module")
def movies():
    from kgrag.data import demo_data_path
    from kgrag.graph import read_triples

    return read_triples(demo_data_path())


def test_byokg_rewrites_nothing_under_the_default_policy(movies, minilm):
    from kgrag.methods.byokg import ByoKGRAG
    from langchain_kgrag.testing import scripted_chat

    prose = "Guillermo del Toro, surely."
    method = ByoKGRAG.from_graph(movies, llm=scripted_chat(prose), embedder=minilm,
                                 on_unusable_reply="empty")
    free = method.retrieve_llm_free("Who directed Paprika?")
    assert method.answer_from("Who directed Paprika?", free).text == prose
    method = ByoKGRAG.from_graph(movies, llm=scripted_chat(prose), embedder=minilm,
                                 on_unusable_reply="fallback")
    grounded = method.answer_from("Who directed Paprika?", free)
    assert grounded.answers == free.metadata["answer_candidates"][:1]
    assert "names none of" in free.metadata["answer_fallback"]
    assert free.metadata["fallback"] == free.metadata["answer_fallback"]


def test_graphraft_fallback_selects_queries_without_the_chat_choice(movies, minilm):
    """Under "fallback" GraphRAFT's L1 is the LLM-free embedding selection: the model's L0
    entities and L2 answer are used, its numbered choice is not asked for."""
    from kgrag.methods.graphraft import GraphRAFT
    from langchain_kgrag.testing import scripted_chat

    question = "Who directed Paprika?"
    free = GraphRAFT.from_graph(movies, embedder=minilm).retrieve(question)
    # replies: L0 entities, then the answer -- a third (selection) call would exhaust the script
    method = GraphRAFT.from_graph(movies, llm=scripted_chat("Paprika", "Satoshi Kon"),
                                  embedder=minilm, on_unusable_reply="fallback")
    result = method.retrieve(question)
    assert [i.name for i in result.items] == [i.name for i in free.items]
    assert result.usage.calls == 1


def test_graphraft_fallback_widens_a_partial_mention_to_the_questions_name(minilm):
    """Under "fallback" the model's "Paris" for a question naming [Paris, France] stands for
    "Paris, France" (the longer name the question mentions), not the other node "Paris";
    under "raise" the model's entity is used as it is."""
    from kgrag import KnowledgeGraph
    from kgrag.methods.graphraft import GraphRAFT
    from langchain_kgrag.testing import scripted_chat

    kg = KnowledgeGraph.from_triples([
        ("Paris, France", "directed_by", "Jerry Ciccoritti"),
        ("Net Worth", "directed_by", "Jerry Ciccoritti"),
        ("Paris", "directed_by", "Raymond Bernard"),
        ("Les Croix de bois", "directed_by", "Raymond Bernard"),
    ])
    question = "which films have the same director of [Paris, France]"
    method = GraphRAFT.from_graph(kg, llm=scripted_chat("Paris", "Net Worth"), embedder=minilm,
                                  on_unusable_reply="fallback")
    result = method.retrieve(question)
    assert result.metadata["mentions"] == ["Paris"]
    assert result.metadata["entities"] == ["Paris, France"]
    assert result.items[0].name == "Net Worth"  # the query's answer first, before top-ups
    raised = GraphRAFT.from_graph(kg, llm=scripted_chat("Paris", "1", "Les Croix de bois"),
                                  embedder=minilm).retrieve(question)
    assert raised.metadata["entities"] == ["Paris"]


def test_graphraft_fallback_keeps_only_entities_the_question_names(movies, minilm):
    """Under "fallback" a mention that passes L0 ("Godfathers" is in the question) but links to
    a node the question does not name ("Tokyo Godfathers") sends GraphRAFT to its LLM-free
    mode; under "raise" the linked node is used as before."""
    from kgrag.methods.graphraft import GraphRAFT
    from langchain_kgrag.testing import scripted_chat

    question = "Who made Godfathers?"
    raised = GraphRAFT.from_graph(movies, llm=scripted_chat("Godfathers", "1"),
                                  embedder=minilm)
    assert raised.link(["Godfathers"]) == ["Tokyo Godfathers"]
    assert "fallback" not in raised.retrieve(question).metadata
    method = GraphRAFT.from_graph(movies, llm=scripted_chat("Godfathers"), embedder=minilm,
                                  on_unusable_reply="fallback")
    result = method.retrieve(question)
    assert "no node the question names" in result.metadata["fallback"]
    free = method.retrieve_llm_free(question)
    assert [i.name for i in result.items] == [i.name for i in free.items]


def test_graphraft_answers_only_with_its_best_querys_nodes_under_fallback(movies, minilm):
    """GraphRAFT's fallback candidates are the best selected query's nodes: a prose answer
    naming a node the vector top-up brought is refused, and the top node answers."""
    from kgrag.methods.graphraft import GraphRAFT
    from langchain_kgrag.testing import scripted_chat

    question = "Who directed Paprika?"
    free = GraphRAFT.from_graph(movies, embedder=minilm).retrieve(question)
    best = GraphRAFT.fallback_candidates(GraphRAFT.from_graph(movies, embedder=minilm), free)
    others = [i.name for i in free.items if i.name not in best and i.name != "Paprika"]
    assert best and others and best[0] == free.items[0].name
    prose = f"I think {others[0]} is the one."
    method = GraphRAFT.from_graph(movies, llm=scripted_chat("Paprika", prose),
                                  embedder=minilm, on_unusable_reply="fallback")
    answer = method.answer(question)
    assert answer.answers == best[:1]
    assert "names none of" in answer.retrieval.metadata["fallback"]


def test_byokg_fallback_candidates_are_the_top_walk_score_tier(movies, minilm):
    """ByoKG-RAG's grounded answers may name the candidates tied with the best walk score (the
    ends of the best relation path), not a weaker walk's end; without LLM-free scores (the
    LLM's own retrieval) every retrieved entity counts."""
    from kgrag.methods.byokg import ByoKGRAG

    method = ByoKGRAG.from_graph(movies, embedder=minilm)
    items = [ScoredEntity("Satoshi Kon", 0.8), ScoredEntity("Mamoru Oshii", 0.8),
             ScoredEntity("Tokyo", 0.5)]
    ranked = RetrievalResult("q", items, metadata={"answer_candidates": [
        "Satoshi Kon", "Mamoru Oshii", "Tokyo"]})
    assert method.fallback_candidates(ranked) == ["Satoshi Kon", "Mamoru Oshii"]
    unranked = RetrievalResult("q", [Triple("Paprika", "directed_by", "Satoshi Kon")])
    assert method.fallback_candidates(unranked) == []
