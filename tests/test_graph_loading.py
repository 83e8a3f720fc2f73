"""Loading a KnowledgeGraph: delimited files, iterables, networkx; bad input; save / load."""

from __future__ import annotations

import json
import pickle
import unicodedata

import networkx as nx
import numpy as np
import pytest

from kgrag import KnowledgeGraph
from kgrag.errors import GraphFormatError, GraphLoadError, KgragError, UnknownNodeError
from kgrag.graph import from_networkx, load_graph, read_triples, save_graph, to_networkx
from kgrag.graph.checksums import refresh_checksums


def write(tmp_path, name: str, text: str, encoding: str = "utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


def triple_set(kg: KnowledgeGraph) -> set[tuple[str, str, str]]:
    return {t.as_tuple() for t in kg.triples()}


MOVIES = {
    ("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
    ("Tokyo Godfathers", "release_year", "2003"),
    ("Paprika", "directed_by", "Satoshi Kon"),
}


# ---------------------------------------------------------------------- delimited files
@pytest.mark.parametrize("sep", ["\t", "|", ",", ";"])
def test_separator_is_detected(tmp_path, sep):
    body = "\n".join(sep.join(t) for t in sorted(MOVIES)) + "\n"
    kg = read_triples(write(tmp_path, "g.txt", body))
    assert triple_set(kg) == MOVIES
    assert kg.counts() == {"nodes": 4, "edges": 3, "relations": 2}


def test_explicit_separator_overrides_detection(tmp_path):
    # The names hold commas, which auto-detection would not pick for a pipe file with no pipes
    # on the first line; an explicit sep reads the file as the author meant.
    path = write(tmp_path, "g.txt", "Smith, John|born_in|Leeds, UK\nLeeds, UK|located_in|England\n")
    kg = read_triples(path, sep="|")
    assert triple_set(kg) == {("Smith, John", "born_in", "Leeds, UK"),
                              ("Leeds, UK", "located_in", "England")}


def test_wrong_explicit_separator_names_the_line(tmp_path):
    path = write(tmp_path, "g.tsv", "a\tr\tb\n")
    with pytest.raises(GraphFormatError) as info:
        read_triples(path, sep=",")
    assert info.value.line == 1 and info.value.path == str(path)


def test_header_row_is_detected_and_skipped(tmp_path):
    kg = read_triples(write(tmp_path, "g.tsv", "head\trelation\ttail\na\tr\tb\n"))
    assert triple_set(kg) == {("a", "r", "b")}
    kg = read_triples(write(tmp_path, "g2.csv", "Subject,Predicate,Object\na,r,b\n"))
    assert triple_set(kg) == {("a", "r", "b")}


def test_first_row_that_is_data_is_kept(tmp_path):
    kg = read_triples(write(tmp_path, "g.tsv", "a\tr\tb\nb\tr\tc\n"))
    assert triple_set(kg) == {("a", "r", "b"), ("b", "r", "c")}


def test_header_flag_forces_the_choice(tmp_path):
    path = write(tmp_path, "g.tsv", "head\trelation\ttail\na\tr\tb\n")
    assert triple_set(read_triples(path, header=False)) == {
        ("head", "relation", "tail"), ("a", "r", "b")}
    odd = write(tmp_path, "odd.tsv", "who\twhat\twhom\na\tr\tb\n")
    assert triple_set(read_triples(odd, header=True)) == {("a", "r", "b")}
    assert ("who", "what", "whom") in triple_set(read_triples(odd))


def test_byte_order_mark_does_not_break_header_detection(tmp_path):
    path = write(tmp_path, "excel.tsv", "head\trelation\ttail\na\tr\tb\n", encoding="utf-8-sig")
    kg = read_triples(path)
    assert triple_set(kg) == {("a", "r", "b")}


def test_columns_as_indices(tmp_path):
    path = write(tmp_path, "g.tsv", "1\tb\ta\tr\n2\tc\tb\ts\n")  # id, tail, head, relation
    kg = read_triples(path, columns=(2, 3, 1))
    assert triple_set(kg) == {("a", "r", "b"), ("b", "s", "c")}


def test_columns_as_header_names(tmp_path):
    path = write(tmp_path, "g.csv", "weight,obj,subj,pred\n0.5,b,a,r\n0.9,c,b,s\n")
    kg = read_triples(path, columns=("subj", "pred", "obj"))
    assert triple_set(kg) == {("a", "r", "b"), ("b", "s", "c")}


def test_unknown_column_name_is_an_error(tmp_path):
    path = write(tmp_path, "g.csv", "x,y,z\na,r,b\n")
    with pytest.raises(GraphFormatError, match="'subject'"):
        read_triples(path, columns=("subject", "y", "z"))


def test_quoted_csv_fields_keep_their_commas(tmp_path):
    path = write(tmp_path, "g.csv",
                 'head,relation,tail\n"Crouching Tiger, Hidden Dragon",directed_by,Ang Lee\n'
                 '"Ang Lee",born_in,"Pingtung County, Taiwan"\n'
                 '"The ""Best"" Film",has_genre,Drama\n')
    kg = read_triples(path)
    assert triple_set(kg) == {
        ("Crouching Tiger, Hidden Dragon", "directed_by", "Ang Lee"),
        ("Ang Lee", "born_in", "Pingtung County, Taiwan"),
        ('The "Best" Film', "has_genre", "Drama"),
    }


def test_quotes_in_tsv_are_kept_literally(tmp_path):
    kg = read_triples(write(tmp_path, "g.tsv", 'Say "Hi"\tr\t"b\n'))
    assert triple_set(kg) == {('Say "Hi"', "r", '"b')}


def test_fields_are_stripped_and_blank_lines_ignored(tmp_path):
    kg = read_triples(write(tmp_path, "g.tsv", "\n  a \t r\t b  \n\n\nb\tr\tc\n\n"))
    assert triple_set(kg) == {("a", "r", "b"), ("b", "r", "c")}


# ---------------------------------------------------------------------- other sources
def test_from_iterable_and_generator():
    kg = KnowledgeGraph.from_triples(iter(sorted(MOVIES)))
    assert triple_set(kg) == MOVIES
    kg = KnowledgeGraph.from_triples([["a", "r", "b"], ("b", "r", "c")])
    assert triple_set(kg) == {("a", "r", "b"), ("b", "r", "c")}


def test_from_iterable_converts_non_strings():
    kg = KnowledgeGraph.from_triples([("Paprika", "release_year", 2006)])
    assert triple_set(kg) == {("Paprika", "release_year", "2006")}


def test_from_networkx_multidigraph_with_attributes_and_isolated_nodes():
    g = nx.MultiDiGraph()
    g.add_node("Satoshi Kon", description="Japanese animator and director",
               aliases=["今敏", "Kon Satoshi"])
    g.add_node("Lonely Node", description="no edges at all")
    g.add_edge("Tokyo Godfathers", "Satoshi Kon", relation="directed_by")
    g.add_edge("Tokyo Godfathers", "Satoshi Kon", relation="written_by")  # parallel edge
    g.add_edge("Paprika", "Satoshi Kon", relation="directed_by")
    kg = from_networkx(g)
    assert triple_set(kg) == {("Tokyo Godfathers", "directed_by", "Satoshi Kon"),
                              ("Tokyo Godfathers", "written_by", "Satoshi Kon"),
                              ("Paprika", "directed_by", "Satoshi Kon")}
    assert kg.has_node("Lonely Node") and kg.num_nodes == 4
    assert kg.node_descriptions == {"Satoshi Kon": "Japanese animator and director",
                                    "Lonely Node": "no edges at all"}
    assert kg.aliases == {"Satoshi Kon": ["今敏", "Kon Satoshi"]}
    assert kg.one_hop(["Lonely Node"]) == []
    assert kg.degree(["Lonely Node"]) == {"Lonely Node": 0}


def test_from_networkx_stats_survive_isolated_nodes():
    g = nx.MultiDiGraph()
    g.add_edge("a", "b", relation="r")
    g.add_edge("a", "b", relation="r")  # the same fact twice
    g.add_edge("b", "b", relation="r")
    g.add_node("alone")
    kg = from_networkx(g)
    assert kg.num_edges == 2 and kg.num_nodes == 3
    assert kg.stats == {"input_edges": 3, "duplicate_edges": 1, "self_loops": 1,
                        "skipped_records": 0}


def test_from_networkx_digraph_and_custom_relation_key():
    g = nx.DiGraph()
    g.add_edge("a", "b", label="r")
    g.add_edge("b", "a", label="s")
    kg = from_networkx(g, relation_key="label")
    assert triple_set(kg) == {("a", "r", "b"), ("b", "s", "a")}


def test_from_networkx_single_string_alias_is_one_alias():
    g = nx.DiGraph()
    g.add_node("United States of America", aliases="USA")
    g.add_edge("New York City", "United States of America", relation="located_in")
    kg = from_networkx(g)
    assert kg.aliases == {"United States of America": ["USA"]}


def test_from_networkx_edge_without_relation_is_an_error():
    g = nx.DiGraph()
    g.add_edge("a", "b")
    with pytest.raises(GraphFormatError, match="relation"):
        from_networkx(g)
    kg = from_networkx(g, default_relation="related_to")
    assert triple_set(kg) == {("a", "related_to", "b")}


def test_to_networkx_round_trip():
    g = nx.MultiDiGraph()
    g.add_node("Satoshi Kon", description="director", aliases=["Kon"])
    g.add_node("alone")
    for h, r, t in MOVIES:
        g.add_edge(h, t, relation=r)
    g.add_edge("Paprika", "Paprika", relation="remake_of")
    kg = from_networkx(g)
    back = to_networkx(kg)
    assert isinstance(back, nx.MultiDiGraph)
    assert set(back.nodes) == set(g.nodes)
    assert sorted((u, v, d["relation"]) for u, v, d in back.edges(data=True)) == sorted(
        (u, v, d["relation"]) for u, v, d in g.edges(data=True))
    assert back.nodes["Satoshi Kon"] == {"description": "director", "aliases": ["Kon"]}
    again = from_networkx(back)
    assert triple_set(again) == triple_set(kg)
    assert set(again.node_names) == set(kg.node_names)
    assert again.aliases == kg.aliases and again.node_descriptions == kg.node_descriptions


def test_alias_for_unknown_node_is_an_error():
    with pytest.raises(UnknownNodeError):
        KnowledgeGraph.from_triples([("a", "r", "b")], aliases={"zzz": ["z"]})


# ---------------------------------------------------------------------- bad input
def test_malformed_line_names_file_and_line(tmp_path):
    path = write(tmp_path, "bad.tsv", "head\trelation\ttail\na\tr\tb\nonly\ttwo\nc\tr\td\n")
    with pytest.raises(GraphFormatError) as info:
        read_triples(path)
    err = info.value
    assert err.path == str(path) and err.line == 3
    assert f"{path}:3" in str(err)
    assert isinstance(err, KgragError) and isinstance(err, ValueError)


def test_too_many_fields_and_empty_fields_are_malformed(tmp_path):
    with pytest.raises(GraphFormatError) as info:
        read_triples(write(tmp_path, "a.tsv", "a\tr\tb\na\tr\tb\textra\n"))
    assert info.value.line == 2
    with pytest.raises(GraphFormatError) as info:
        read_triples(write(tmp_path, "b.tsv", "a\tr\tb\n\n\nx\t \ty\n"))
    assert info.value.line == 4


def test_on_error_skip_skips_and_counts(tmp_path, caplog):
    path = write(tmp_path, "bad.tsv",
                 "a\tr\tb\nonly\ttwo\nc\tr\td\nx\t\ty\ntoo\tmany\tfields\there\n")
    with caplog.at_level("WARNING"):
        kg = read_triples(path, on_error="skip")
    assert triple_set(kg) == {("a", "r", "b"), ("c", "r", "d")}
    assert kg.stats["skipped_records"] == 3
    assert "skipped 3" in caplog.text


def test_on_error_must_be_known(tmp_path):
    with pytest.raises(ValueError):
        read_triples(write(tmp_path, "g.tsv", "a\tr\tb\n"), on_error="ignore")
    with pytest.raises(ValueError):
        KnowledgeGraph.from_triples([], on_error="ignore")


def test_malformed_record_in_iterable():
    records = [("a", "r", "b"), ("a", "r"), ("c", "", "d"), None, ("e", "r", "f")]
    with pytest.raises(GraphFormatError) as info:
        KnowledgeGraph.from_triples(records)
    assert info.value.line == 2
    kg = KnowledgeGraph.from_triples(records, on_error="skip")
    assert triple_set(kg) == {("a", "r", "b"), ("e", "r", "f")}
    assert kg.stats["skipped_records"] == 3


def test_unreadable_separator_and_encoding(tmp_path):
    with pytest.raises(GraphFormatError, match="separator"):
        read_triples(write(tmp_path, "g.txt", "no separators here\n"))
    latin = tmp_path / "latin.tsv"
    latin.write_bytes("caf\xe9\tr\tb\n".encode("latin-1"))
    with pytest.raises(GraphFormatError, match="utf-8"):
        read_triples(latin)
    assert read_triples(latin, encoding="latin-1").has_node("café")


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        read_triples("/nonexistent/dir/triples.tsv")


@pytest.mark.parametrize("text", ["", "\n\n  \n", "head\trelation\ttail\n"])
def test_empty_file_gives_a_working_empty_graph(tmp_path, text):
    kg = read_triples(write(tmp_path, "empty.tsv", text))
    assert kg.counts() == {"nodes": 0, "edges": 0, "relations": 0}
    assert kg.stats["skipped_records"] == 0
    assert kg.one_hop(["x"]) == []
    assert kg.follow_path(["x"], "r") == []
    assert kg.shortest_paths(["x"], ["y"]) == []
    assert kg.k_hop_subgraph(["x"]) == []
    assert kg.degree(["x"]) == {}
    assert kg.relation_histogram() == []
    assert "0 entities, 0 edges" in kg.schema_summary()
    assert nx.number_of_nodes(to_networkx(kg)) == 0


def test_duplicate_triples_are_stored_once_and_counted(tmp_path):
    kg = read_triples(write(tmp_path, "d.tsv", "a\tr\tb\na\tr\tb\nb\tr\tc\na\tr\tb\n"))
    assert kg.num_edges == 2
    assert kg.stats["input_edges"] == 4 and kg.stats["duplicate_edges"] == 2
    assert [t.as_tuple() for t in kg.one_hop(["a"])] == [("a", "r", "b")]
    assert kg.degree(["b"]) == {"b": 2}


def test_self_loops_are_kept_and_counted():
    kg = KnowledgeGraph.from_triples([("a", "similar_to", "a"), ("a", "r", "b"), ("b", "r", "b")])
    assert kg.stats["self_loops"] == 2 and kg.num_edges == 3
    assert {t.as_tuple() for t in kg.one_hop(["a"], direction="out")} == {
        ("a", "similar_to", "a"), ("a", "r", "b")}
    assert {t.as_tuple() for t in kg.one_hop(["a"], direction="in")} == {("a", "similar_to", "a")}
    assert kg.degree(["a"]) == {"a": 3}  # the loop counts once out and once in, as in networkx


def test_unicode_names_nfc_and_nfd_are_one_node(tmp_path):
    composed = unicodedata.normalize("NFC", "Agnès Varda")
    decomposed = unicodedata.normalize("NFD", "Agnès Varda")
    assert composed != decomposed
    path = write(tmp_path, "u.tsv",
                 f"Cléo from 5 to 7\tdirected_by\t{composed}\n"
                 f"{decomposed}\tborn_in\tIxelles\n"
                 "東京ゴッドファーザーズ\tdirected_by\t今敏\n"
                 "🎬 Emoji Film\thas_genre\t😂 comedy\n")
    kg = read_triples(path)
    assert kg.num_nodes == 7
    assert kg.node_id(decomposed) == kg.node_id(composed)
    assert composed in kg.node_names and decomposed not in kg.node_names
    assert {t.tail for t in kg.one_hop([decomposed], direction="out")} == {"Ixelles"}
    assert kg.one_hop(["今敏"]) == kg.one_hop(["東京ゴッドファーザーズ"])
    assert kg.follow_path(["🎬 Emoji Film"], "has_genre")[0].nodes == ("🎬 Emoji Film", "😂 comedy")


def test_very_long_names_round_trip(tmp_path):
    long_head, long_rel = "H" * 10_000, "r" + "é" * 9_999
    path = write(tmp_path, "long.tsv", f"{long_head}\t{long_rel}\tshort\n")
    kg = read_triples(path)
    assert triple_set(kg) == {(long_head, long_rel, "short")}
    save_graph(kg, tmp_path / "saved")
    back = load_graph(tmp_path / "saved")
    assert triple_set(back) == {(long_head, long_rel, "short")}
    assert triple_set(from_networkx(to_networkx(kg))) == triple_set(kg)


# ---------------------------------------------------------------------- save / load
@pytest.fixture
def described_graph() -> KnowledgeGraph:
    return KnowledgeGraph.from_triples(
        sorted(MOVIES) + [("Paprika", "same_as", "Paprika"), ("東京", "located_in", "日本")],
        node_descriptions={"Satoshi Kon": "Japanese director (1963–2010)"},
        relation_descriptions={"directed_by": "film -> its director"},
        aliases={"Satoshi Kon": ["今敏"], "日本": ["Japan", "Nippon"]},
    )


def test_save_load_round_trip(tmp_path, described_graph):
    kg = described_graph
    save_graph(kg, tmp_path / "g")
    back = load_graph(tmp_path / "g")
    for name in ("heads", "rels", "tails", "out_indptr", "in_order", "in_indptr"):
        np.testing.assert_array_equal(getattr(back, name), getattr(kg, name))
    assert back.heads.dtype == kg.heads.dtype
    assert back.node_names == kg.node_names and back.relation_names == kg.relation_names
    assert back.node_descriptions == kg.node_descriptions
    assert back.relation_descriptions == kg.relation_descriptions
    assert back.aliases == kg.aliases
    assert back.one_hop(["Satoshi Kon"]) == kg.one_hop(["Satoshi Kon"])


def test_saved_files_need_no_pickle(tmp_path, described_graph, monkeypatch):
    save_graph(described_graph, tmp_path / "g")
    files = sorted(p.name for p in (tmp_path / "g").iterdir())
    assert all(f.endswith((".json", ".npy")) for f in files), files
    for npy in (tmp_path / "g").glob("*.npy"):
        assert np.load(npy, allow_pickle=False).dtype.kind in "iu"

    def refuse(*args, **kwargs):
        raise AssertionError("pickle must not be used to load a graph")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    assert load_graph(tmp_path / "g").num_edges == described_graph.num_edges


def test_object_array_is_refused_not_unpickled(tmp_path, described_graph):
    save_graph(described_graph, tmp_path / "g")
    evil = np.array([object(), 1], dtype=object)
    with open(tmp_path / "g" / "rels.npy", "wb") as fh:
        np.save(fh, evil, allow_pickle=True)
    with pytest.raises(GraphLoadError):
        load_graph(tmp_path / "g")


def test_overwriting_an_existing_save(tmp_path, described_graph):
    target = tmp_path / "g"
    save_graph(KnowledgeGraph.from_triples([("x", "y", "z")] * 2 + [("z", "y", "w")]), target)
    save_graph(described_graph, target)
    back = load_graph(target)
    assert triple_set(back) == triple_set(described_graph)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]  # no temp / backup left behind


def test_refuses_to_overwrite_a_foreign_directory(tmp_path, described_graph):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("precious")
    with pytest.raises(GraphLoadError):
        save_graph(described_graph, foreign)
    assert (foreign / "notes.txt").read_text() == "precious"


def test_save_into_an_empty_existing_directory(tmp_path, described_graph):
    (tmp_path / "g").mkdir()
    save_graph(described_graph, tmp_path / "g")
    assert load_graph(tmp_path / "g").num_edges == described_graph.num_edges


@pytest.fixture
def saved(tmp_path, described_graph):
    save_graph(described_graph, tmp_path / "g")
    return tmp_path / "g"


def test_load_foreign_or_missing_directory(tmp_path):
    with pytest.raises(GraphLoadError):
        load_graph(tmp_path / "does-not-exist")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("a,b,c\n")
    with pytest.raises(GraphLoadError, match="manifest.json"):
        load_graph(tmp_path / "other")
    (tmp_path / "other" / "manifest.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(GraphLoadError, match="does not hold a kgrag graph"):
        load_graph(tmp_path / "other")


@pytest.mark.parametrize("manifest", ["{not json", "[1, 2]", '"text"', "\xff\xfe"])
def test_corrupted_manifest(saved, manifest):
    (saved / "manifest.json").write_text(manifest, encoding="latin-1")
    with pytest.raises(GraphLoadError):
        load_graph(saved)


def test_manifest_that_disagrees_with_the_arrays(saved):
    manifest = json.loads((saved / "manifest.json").read_text())
    (saved / "manifest.json").write_text(json.dumps({**manifest, "edges": manifest["edges"] + 1}))
    with pytest.raises(GraphLoadError, match="does not match"):
        load_graph(saved)
    (saved / "manifest.json").write_text(json.dumps({**manifest, "version": 99}))
    with pytest.raises(GraphLoadError, match="version"):
        load_graph(saved)


@pytest.mark.parametrize("keep", [0, 5, 60, -2])
def test_truncated_npy(saved, keep):
    raw = (saved / "tails.npy").read_bytes()
    (saved / "tails.npy").write_bytes(raw[:keep])
    with pytest.raises(GraphLoadError):
        load_graph(saved)


@pytest.mark.parametrize("name", ["manifest.json", "nodes.json", "relations.json", "extras.json",
                                  "heads.npy", "rels.npy", "tails.npy"])
def test_missing_saved_file(saved, name):
    (saved / name).unlink()
    with pytest.raises(GraphLoadError, match=name.split(".")[0]):
        load_graph(saved)


@pytest.mark.parametrize("edit", [
    ("nodes.json", ["a", "a", "b", "c", "d", "e", "f"]),          # duplicate names
    ("nodes.json", {"a": 1}),                                     # wrong shape
    ("extras.json", {"node_descriptions": [1, 2, 3]}),            # wrong shape
    ("extras.json", {"aliases": {"nobody": ["x"]}}),              # alias of unknown node
    ("extras.json", {"aliases": {"Paprika": 5}}),                 # not a list
])
def test_inconsistent_tables(saved, edit):
    name, content = edit
    if name == "nodes.json" and isinstance(content, list):
        n = len(json.loads((saved / "nodes.json").read_text()))
        content = (content * n)[:n]
    (saved / name).write_text(json.dumps(content))
    refresh_checksums(saved)  # the structural checks refuse it, not only the checksum
    with pytest.raises(GraphLoadError):
        load_graph(saved)


def test_ids_out_of_range_in_arrays(saved):
    tails = np.load(saved / "tails.npy")
    tails[0] = 10_000
    np.save(saved / "tails.npy", tails)
    refresh_checksums(saved)
    with pytest.raises(GraphLoadError):
        load_graph(saved)
    np.save(saved / "tails.npy", tails.astype(np.float64))
    refresh_checksums(saved)
    with pytest.raises(GraphLoadError):
        load_graph(saved)


def test_from_triples_takes_the_graphs_own_triples():
    """``graph.triples()`` gives :class:`Triple` objects; a graph rebuilt from them (or from
    them mixed with tuples) is the same graph."""
    from kgrag import KnowledgeGraph

    kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon"),
                                      ("Paprika", "has_genre", "Anime")])
    again = KnowledgeGraph.from_triples([*kg.triples(), ("Perfect Blue", "directed_by",
                                                         "Satoshi Kon")])
    assert set(kg.triples()) < set(again.triples()) and again.num_edges == 3
