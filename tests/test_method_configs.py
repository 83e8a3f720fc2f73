"""The methods' knob dataclasses share one base (kgrag.methods.config.MethodConfig): field
names, a checked replace naming the method, a dict round trip, and they stay frozen. Every
method declares its config (``config_class``) and reads its knobs from it only."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from ketrag_fakes import HashingEmbedder

from kgrag import read_triples
from kgrag.methods.byokg.config import ByoKGConfig
from kgrag.methods.config import MethodConfig
from kgrag.methods.graphraft.config import GraphRAFTConfig
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.registry import get_method, method_names
from kgrag.methods.simgrag.config import SimGRAGConfig
from kgrag.methods.ultrag.config import UltRAGConfig

CONFIGS = [(UltRAGConfig, "UltRAG", "top_k", 7), (ByoKGConfig, "ByoKG-RAG", "link_top_k", 5),
           (KETRAGConfig, "KET-RAG", "chunk_size", 300), (SimGRAGConfig, "SimGRAG", "top_k", 5),
           (GraphRAFTConfig, "GraphRAFT", "top_k", 5)]
MOVIES = Path(__file__).resolve().parents[1] / "shared" / "kgrag" / "data" / "movies.tsv"


@pytest.mark.parametrize("cls, label, knob, value", CONFIGS)
def test_configs_share_the_base_helpers(cls, label, knob, value):
    assert issubclass(cls, MethodConfig) and cls.label == label
    config = cls()
    assert knob in cls.field_names() and "label" not in cls.field_names()
    changed = config.replace(**{knob: value})
    assert getattr(changed, knob) == value and getattr(config, knob) != value
    assert config.replace() is config
    with pytest.raises(TypeError, match=f"unknown {label} parameter.*nonsense.*see {cls.__name__}"):
        config.replace(nonsense=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, knob, value)
    data = changed.as_dict()
    assert set(data) == set(cls.field_names())
    assert cls.from_dict({**data, "written_by_a_later_version": 1}) == changed


@pytest.mark.parametrize("cls, bad", [(UltRAGConfig, {"top_k": 0}),
                                      (ByoKGConfig, {"link_top_k": 0}),
                                      (KETRAGConfig, {"chunk_size": 0}),
                                      (SimGRAGConfig, {"top_k": 0}),
                                      (GraphRAFTConfig, {"families": ("3hop",)})])
def test_replace_checks_the_new_values(cls, bad):
    with pytest.raises(ValueError):
        cls().replace(**bad)


@pytest.mark.parametrize("cls", [c for c, *_ in CONFIGS])
def test_the_unusable_reply_policy_is_a_field_of_every_config(cls):
    assert cls().on_unusable_reply == "raise"
    assert cls(on_unusable_reply="empty").on_unusable_reply == "empty"
    with pytest.raises(ValueError, match="on_unusable_reply"):
        cls(on_unusable_reply="skip")


@pytest.fixture(scope="module")
def methods():
    """One instance of every registered graph method, with its knobs set by keyword."""
    kg = read_triples(MOVIES)
    emb = HashingEmbedder()
    built = {}
    for name in method_names("graph"):
        knobs = {"linking": "exact"} if name == "ultrag" else {}
        built[name] = get_method(name).build(kg, embedder=emb, on_unusable_reply="empty",
                                             **knobs)
    return built


def test_every_method_declares_its_config_and_mirrors_no_knob(methods):
    for name, method in methods.items():
        cls = type(method)
        assert "config_class" in cls.__dict__, name  # declared, not inherited or probed
        assert isinstance(method.config, cls.config_class)
        assert method.config.on_unusable_reply == method.on_unusable_reply == "empty"
        mirrored = [f for f in cls.config_class.field_names() if f != "on_unusable_reply"
                    and (f in vars(method) or hasattr(cls, f))]
        assert not mirrored, f"{name} mirrors {mirrored}: read them from method.config"
        method.on_unusable_reply = "raise"  # the settable policy replaces the config's field
        assert method.config.on_unusable_reply == "raise"


def test_the_main_result_count_is_top_k_everywhere(methods):
    """One name for "how many": ``top_k`` for a method's result count, ``<thing>_top_k`` for
    the others -- no ``k``, ``top_m``, ``max_nodes``, ``link_k`` or ``knn_k`` left."""
    for name in ("simgrag", "ultrag", "graphraft"):
        assert "top_k" in type(methods[name]).config_class.field_names(), name
    old = {"k", "top_m", "max_nodes", "k_nodes", "k_relations", "k_types", "link_k", "knn_k",
           "top_k_entities", "top_k_relationships"}
    for cls, *_ in CONFIGS:
        assert not old & set(cls.field_names()), cls.__name__
    assert methods["graphraft"].config.top_k == 20 and methods["simgrag"].config.top_k == 3


def test_ketrag_reads_an_index_saved_with_the_old_knob_names(tmp_path):
    """A manifest written before the rename keeps its values (the saved file's names)."""
    saved = {**KETRAGConfig().as_dict(), "knn_k": 5, "top_k_entities": 7,
             "top_k_relationships": 3}
    for new in ("neighbor_top_k", "entity_top_k", "relationship_top_k"):
        del saved[new]
    config = KETRAGConfig.from_dict(json.loads(json.dumps(saved)))
    assert (config.neighbor_top_k, config.entity_top_k, config.relationship_top_k) == (5, 7, 3)
