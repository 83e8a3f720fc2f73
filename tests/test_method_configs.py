"""The methods' knob dataclasses share one base (kgrag.methods.config.MethodConfig): field
names, a checked replace naming the method, a dict round trip, and they stay frozen."""

from __future__ import annotations

import dataclasses

import pytest
from kgrag.methods.byokg.config import ByoKGConfig
from kgrag.methods.config import MethodConfig
from kgrag.methods.ketrag.config import KETRAGConfig
from kgrag.methods.simgrag.config import SimGRAGConfig
from kgrag.methods.ultrag.config import UltRAGConfig

CONFIGS = [(UltRAGConfig, "UltRAG", "top_k", 7), (ByoKGConfig, "ByoKG-RAG", "top_m", 5),
           (KETRAGConfig, "KET-RAG", "chunk_size", 300), (SimGRAGConfig, "SimGRAG", "k", 5)]


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


@pytest.mark.parametrize("cls, bad", [(UltRAGConfig, {"top_k": 0}), (ByoKGConfig, {"top_m": 0}),
                                      (KETRAGConfig, {"chunk_size": 0}), (SimGRAGConfig, {"k": 0})])
def test_replace_checks_the_new_values(cls, bad):
    with pytest.raises(ValueError):
        cls().replace(**bad)
