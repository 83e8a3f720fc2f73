"""One place turns a relation into the texts an embedder reads; every method uses it."""

import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.embed import LookupEmbedder
from kgrag.embed.relations import RelationTextVectors
from kgrag.graph import from_networkx, load_graph, save_graph, to_networkx
from kgrag.linking import RelationLinker
from kgrag.text.relations import identifier_texts, is_opaque, relation_texts, relation_texts_for


@pytest.mark.parametrize("name, texts", [
    ("directed_by", ["directed by"]),
    ("people.person.place_of_birth", ["place of birth", "people person place of birth"]),
    ("__people__person__place_of_birth", ["place of birth", "people person place of birth"]),
    ("/film/film/directed_by", ["directed by", "film film directed by"]),
    ("http://dbpedia.org/ontology/birthPlace", ["birth place"]),
    ("schema:birthPlace", ["birth place", "schema birth place"]),
    ("P57", ["p57"]),
])
def test_identifier_texts(name, texts):
    assert identifier_texts(name) == texts


def test_priority_label_then_description_then_identifier():
    assert relation_texts_for("P57", labels=["director", "directed by"],
                              description="the film's director") == ["director", "directed by"]
    assert relation_texts_for("P57", description="the film's director") == ["the film's director"]
    # a readable identifier adds its words after the description, a label's duplicate is dropped
    assert relation_texts_for("directed_by", labels=["Directed By"]) == ["Directed By"]
    assert relation_texts_for("film.directed_by", description="who directed it") == [
        "who directed it", "directed by", "film directed by"]
    assert is_opaque("P57") and is_opaque("r12") and not is_opaque("born_in")


def test_relation_texts_reads_the_graphs_tables():
    kg = KnowledgeGraph.from_triples([("a", "P1", "b"), ("a", "x.y.lives_in", "c")],
                                     relation_descriptions={"P1": "child of"})
    kg.relation_labels = {"P1": ["parent"]}
    assert relation_texts(kg, "P1") == ["parent"]
    assert relation_texts(kg, kg.relation_id("x.y.lives_in")) == ["lives in", "x y lives in"]


def test_vectors_take_the_best_text_per_relation():
    emb = LookupEmbedder({"a": [1, 0, 0], "b": [0, 1, 0], "c": [0, 0, 1]})
    vecs = RelationTextVectors.from_texts([["a", "b"], ["c"], ["a"]], emb)
    q = np.array([0.0, 1.0, 0.0], np.float32)
    assert vecs.similarities(q).tolist() == [1.0, 0.0, 0.0]
    d = vecs.distances(np.stack([q, np.array([0, 0, 1.0])]))
    assert d.shape == (2, 3)
    np.testing.assert_allclose(d[0], [0.0, np.sqrt(2), np.sqrt(2)], atol=1e-6)
    np.testing.assert_allclose(d[1], [np.sqrt(2), 0.0, np.sqrt(2)], atol=1e-6)
    with pytest.raises(ValueError):
        RelationTextVectors.from_texts([["a"], []], emb)


def test_last_segment_wins_for_a_person_phrase(minilm):
    """Relations sharing domain words crowd each other out when only the whole path is read."""
    rels = ["people.person.place_of_birth", "people.person.parents", "people.person.profession",
            "people.person.nationality", "people.deceased_person.place_of_death"]
    q = minilm.embed_query("birthplace")
    whole = RelationTextVectors.from_texts([[identifier_texts(r)[-1]] for r in rels], minilm)
    both = RelationTextVectors.from_texts([identifier_texts(r) for r in rels], minilm)
    assert int(np.argmax(both.similarities(q))) == 0
    assert both.similarities(q)[0] > whole.similarities(q)[0]


def test_relation_linker_links_labels_and_last_segments():
    kg = KnowledgeGraph.from_triples([("a", "P1", "b"), ("a", "people.person.place_of_birth", "c")])
    kg.relation_labels = {"P1": ["parent", "father or mother"]}
    linker = RelationLinker.from_graph(kg, mode="fuzzy")
    assert linker.link("parent")[0].name == "P1"
    assert linker.link("place of birth")[0].name == "people.person.place_of_birth"
    assert linker.link("place of birth")[0].source == "alias"


def test_simgrag_and_byokg_read_labels(minilm):
    """An opaque relation id with a label is found by the label's words in both methods."""
    from kgrag.methods.byokg.triplets import TripletScorer
    from kgrag.methods.simgrag import SimGRAG

    triples = [("Paprika", "P1", "Satoshi Kon"), ("Paprika", "P2", "Japanese"),
               ("Paprika", "P3", "Megumi Hayashibara")]
    kg = KnowledgeGraph.from_triples(triples)
    kg.relation_labels = {"P1": ["directed by"], "P2": ["in language"], "P3": ["starred actors"]}
    sim = SimGRAG(kg, embedder=minilm, relation_top_k=1)
    result = sim.retrieve_pattern([("Paprika", "director", "UNKNOWN person 1")])
    assert [t.relation for t in result.items[0].triples] == ["P1"]
    scorer = TripletScorer.from_graph(kg, minilm)
    q = minilm.embed_query("language")
    assert kg.relation_names[int(np.argmax(scorer.relation_similarities(q)))] == "P2"


def test_relation_labels_from_a_mapping_a_file_and_networkx(tmp_path):
    import networkx as nx

    from kgrag.errors import GraphFormatError, UnknownRelationError

    triples = [("Paprika", "P57", "Satoshi Kon"), ("Paprika", "P364", "Japanese")]
    kg = KnowledgeGraph.from_triples(triples, relation_labels={"P57": "director"})
    assert kg.relation_labels == {"P57": ["director"]}
    assert relation_texts(kg, "P57") == ["director"]
    labels = tmp_path / "labels.tsv"
    labels.write_text("P57\tdirector\tdirected by\nP364\toriginal language\n", encoding="utf-8")
    kg = KnowledgeGraph.from_triples(triples, relation_labels=labels)
    assert kg.relation_labels == {"P57": ["director", "directed by"],
                                  "P364": ["original language"]}
    save_graph(kg, tmp_path / "g")
    assert load_graph(tmp_path / "g").relation_labels == kg.relation_labels
    g = nx.MultiDiGraph()
    g.add_edge("Paprika", "Satoshi Kon", relation="P57", label="director")
    from_nx = from_networkx(g)
    assert from_nx.relation_labels == {"P57": ["director"]}
    assert from_networkx(to_networkx(from_nx)).relation_labels == {
        "P57": ["director"]}
    with pytest.raises(UnknownRelationError):
        KnowledgeGraph.from_triples(triples, relation_labels={"P1": "x"})
    with pytest.raises(GraphFormatError):
        KnowledgeGraph.from_triples(triples, relation_labels=tmp_path / "missing.tsv")


FREEBASE_STYLE = [
    ("Paprika", "film.film.directed_by", "Satoshi Kon"),
    ("Paprika", "film.film.genre", "Animation"),
    ("Kid A", "music.album.genre", "Electronic"),
    ("Kid A", "music.album.artist", "Radiohead"),
    ("Satoshi Kon", "people.person.place_of_birth", "Sapporo"),
    ("Radiohead", "music.artist.origin", "Abingdon"),
]


def test_byokg_follows_paths_written_in_words():
    from kgrag.methods.byokg.paths import RelationResolver, follow_metapath

    kg = KnowledgeGraph.from_triples(FREEBASE_STYLE)
    resolver = RelationResolver.from_graph(kg)
    assert resolver.resolve_all("genre") == ["film.film.genre", "music.album.genre"]
    found = follow_metapath(kg, ["Paprika"], "directed by -> place of birth", resolver=resolver)
    assert [p.target for p in found.paths] == ["Sapporo"] and not found.partial
    found = follow_metapath(kg, ["Kid A", "Paprika"], "genre", resolver=resolver)
    assert sorted(p.target for p in found.paths) == ["Animation", "Electronic"]
    assert found.executed == "film.film.genre | music.album.genre"
    before = follow_metapath(kg, ["Paprika"], "directed by -> place of birth",
                             resolver=RelationResolver(kg.relation_names))
    assert before.paths == []  # the identifiers alone do not know the words


def test_ultrag_binds_relations_written_in_words():
    from kgrag.methods.ultrag import UltRAG

    kg = KnowledgeGraph.from_triples(FREEBASE_STYLE)
    ultrag = UltRAG(kg, linking="exact", executor="symbolic")  # crisp answer sets
    top = ultrag.execute('"Paprika" -> "directed by" -> "place of birth"')
    assert top[0].name == "Sapporo" and top[0].metadata["query"] == (
        '"Paprika" -> film.film.directed_by -> people.person.place_of_birth')
    genres = {e.name for e in ultrag.execute('"Kid A" -> "genre"')}
    assert genres == {"Electronic"}  # the union's other branch has no edge from Kid A
    assert {e.name for e in ultrag.execute('"Sapporo" -> "place of birth"_inv')} == {"Satoshi Kon"}


def test_simgrag_k_relations_adapts_and_empty_results_say_why(minilm):
    from kgrag.methods.simgrag import SimGRAG
    from kgrag.methods.simgrag.candidates import auto_k_relations

    kg = KnowledgeGraph.from_triples(FREEBASE_STYLE)
    sim = SimGRAG(kg, embedder=minilm)
    assert sim.candidates.k_relations == kg.num_relations == auto_k_relations(6)
    assert SimGRAG(kg, embedder=minilm, relation_top_k=2).candidates.k_relations == 2
    ok = sim.retrieve_pattern([("Paprika", "directed by", "UNKNOWN person 1"),
                               ("UNKNOWN person 1", "place of birth", "UNKNOWN city 1")])
    assert ok.items and "empty_reason" not in ok.metadata
    # Radiohead is nobody's genre: with one candidate per item the second edge has no match
    sim = SimGRAG(kg, embedder=minilm, node_top_k=1, relation_top_k=1)
    empty = sim.retrieve_pattern([("Paprika", "directed by", "UNKNOWN person 1"),
                                  ("UNKNOWN person 1", "genre", "Radiohead")])
    assert empty.items == []
    assert empty.metadata["unmatched_edges"] == [["UNKNOWN person 1", "genre", "Radiohead"]]
    assert "no graph edge matches" in empty.metadata["empty_reason"]
    # each edge alone matches, but an injective match cannot use Paprika twice
    loop = KnowledgeGraph.from_triples([("a", "parent", "b"), ("b", "child", "a")])
    sim = SimGRAG(loop, embedder=minilm, node_top_k=1, injective=True)
    pattern = [("a", "parent", "UNKNOWN entity 1"), ("UNKNOWN entity 1", "child",
                                                     "UNKNOWN entity 2")]
    empty = sim.retrieve_pattern(pattern)
    assert empty.items == [] and empty.metadata["unmatched_edges"] == []
    assert "injective='prefer'" in empty.metadata["empty_reason"]
    sim.config = sim.config.replace(injective="prefer")
    assert sim.retrieve_pattern(pattern).items


def test_byokg_walks_a_self_loop_again_but_never_straight_back():
    """PathQuestion-L's gold paths follow self-loops twice (Robin_Hood -recording-> Robin_Hood
    -recording-> Robin_Hood); a walk straight back over an ordinary edge stays excluded."""
    from kgrag.methods.byokg.paths import RelationResolver, follow_metapath

    kg = KnowledgeGraph.from_triples([("Robin_Hood", "recording", "Robin_Hood"),
                                      ("Robin_Hood", "releases", "Live"),
                                      ("Paprika", "directed_by", "Satoshi Kon")])
    resolver = RelationResolver.from_graph(kg)
    found = follow_metapath(kg, ["Robin_Hood"], "recording -> recording -> releases",
                            resolver=resolver)
    assert not found.partial and [p.target for p in found.paths] == ["Live"]
    back = follow_metapath(kg, ["Paprika"], "directed_by -> directed_by", resolver=resolver)
    assert back.paths == [] or back.partial


def test_ultrag_prompt_names_relations_by_their_labels():
    from kgrag.methods.ultrag import UltRAG

    wikidata = KnowledgeGraph.from_triples([("Q1", "P57", "Q2"), ("Q1", "P364", "Q3")],
                                           relation_labels={"P57": "director"})
    prompt = UltRAG(wikidata, linking="exact", executor="symbolic").query_prompt("who directed?")
    assert "P57: director" in prompt and "P364: P364" in prompt
    named = KnowledgeGraph.from_triples([("a", "directed_by", "b")],
                                        relation_labels={"directed_by": ["director"]})
    prompt = UltRAG(named, linking="exact", executor="symbolic").query_prompt("who directed?")
    assert "P0: directed_by (director)" in prompt


def test_graphraft_embedding_selector_reads_labels(minilm):
    from kgrag.methods.graphraft.pipeline import GraphRAFT

    kg = KnowledgeGraph.from_triples([("Paprika", "P57", "Satoshi Kon"),
                                      ("Paprika", "P364", "Japanese")],
                                     relation_labels={"P57": "director", "P364": "language"})
    graphraft = GraphRAFT(kg, embedder=minilm)
    assert graphraft.selector.relation_text("P57") == "director"
    cands = graphraft.candidates(graphraft.link(["Paprika"]))
    picked = graphraft.selector.select("Who is the director of Paprika?", cands, 1)
    assert cands[picked[0]].pattern.relations == ("P57",)


def test_byokg_prunes_word_readings_the_graph_does_not_allow():
    """4 relations end in 'artist' at each of 3 steps (64 readings, more than the combination
    cap); only the readings with edges from the entities reached so far are followed."""
    from kgrag.methods.byokg.paths import MAX_COMBINATIONS, RelationResolver, follow_metapath

    domains = ["album", "recording", "release", "track"]
    triples = [(f"x{i}", f"music.{d}.artist", f"y{i}") for i, d in enumerate(domains)]
    triples += [("Staind", "music.track.artist", "Staind")]  # the one chain that exists
    kg = KnowledgeGraph.from_triples(triples)
    resolver = RelationResolver.from_graph(kg)
    assert len(resolver.resolve_all("artist")) ** 3 > MAX_COMBINATIONS
    found = follow_metapath(kg, ["Staind"], "artist -> artist -> artist", resolver=resolver)
    assert not found.partial and [p.target for p in found.paths] == ["Staind"]
    assert found.executed == "music.track.artist -> music.track.artist -> music.track.artist"
