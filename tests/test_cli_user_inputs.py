"""What a user types that the tools must understand (issue 29, items 5 and 10): an unknown
method name, a triples file with the wrong number of columns, and ``--llm`` pointing at a module
in the current folder or at a file."""

from __future__ import annotations

import sys

import pytest

import langchain_kgrag as lc
import llama_index_kgrag as li
from kgrag import cli
from kgrag.commands.common import load_factory
from kgrag.errors import ConfigurationError, UnknownMethodError

MODELS = '''
def chat():
    return lambda prompt: "a reply"

SETTING = "not callable"
'''


@pytest.mark.parametrize("factory", [lc.retriever_for, li.retriever_for, li.query_engine_for])
def test_an_unknown_method_is_a_typed_error_listing_the_known_ones(factory):
    with pytest.raises(UnknownMethodError) as caught:
        factory("simgrg")
    message = str(caught.value)
    assert isinstance(caught.value, KeyError)
    assert "byokg, simgrag, ultrag, graphraft, ketrag" in message
    assert "did you mean 'simgrag'?" in message


def test_kgrag_info_hints_at_options_the_command_line_has(capsys, tmp_path):
    two = tmp_path / "two.csv"
    two.write_text("a,b\nc,d\n")
    assert cli.main(["info", str(two)]) == 2
    err = capsys.readouterr().err
    assert "--sep" in err and "columns" not in err
    four = tmp_path / "four.csv"
    four.write_text("src,weight,rel,dst\na,1,r,b\n")
    assert cli.main(["info", str(four)]) == 2
    assert "--columns" in capsys.readouterr().err
    assert cli.main(["info", str(four), "--columns", "src,rel,dst"]) == 0
    assert "edges: 1" in capsys.readouterr().out
    assert cli.main(["info", str(four), "--columns", "0,2,3"]) == 0
    assert "edges: 1" in capsys.readouterr().out


def test_llm_module_in_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "kgrag_test_models_here.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    # as a console script runs: neither "" nor the folder on sys.path
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    llm = load_factory("kgrag_test_models_here:chat")
    assert llm("q") == "a reply"
    assert str(tmp_path) not in sys.path  # not left behind
    assert load_factory("kgrag_test_models_here:SETTING", "--embedder") == "not callable"


def test_llm_from_a_file_path(tmp_path, monkeypatch):
    (tmp_path / "models.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    assert load_factory("./models.py:chat")("q") == "a reply"
    assert load_factory(f"{tmp_path / 'models.py'}:chat")("q") == "a reply"
    with pytest.raises(ConfigurationError, match="no Python file"):
        load_factory("./missing.py:chat")
    with pytest.raises(ConfigurationError, match="no attribute 'nope'"):
        load_factory("./models.py:nope")
    with pytest.raises(ConfigurationError, match="No module named"):
        load_factory("kgrag_no_such_module_anywhere:chat")
