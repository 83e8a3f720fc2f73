"""CONTRIBUTING.md's recipes, run as written: its code blocks are the test's code.

Every ```` ```python ```` block of CONTRIBUTING.md whose first line is ``# new file: PATH`` is
written to ``PATH`` under a temporary directory that extends the ``kgrag`` package it belongs to
(``kgrag.methods`` / ``kgrag.graph`` ``__path__``), so it is imported under the name the recipe
gives it; a block headed ``# at the end of: PATH`` runs in that module's namespace, as if
appended to the file. The tests then use the new method and backend only through what the
recipes promise: ``kgrag ask`` / ``kgrag eval``, the registry, both adapters, ``kgrag load-db
--backend``. A recipe that drifts from the code fails here.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRIBUTING = ROOT / "CONTRIBUTING.md"
MOVIES = ROOT / "shared" / "kgrag" / "data" / "movies.tsv"
QUESTION = "Who directed Tokyo Godfathers?"
BLOCK = re.compile(r"^```python\n# (new file|at the end of): (\S+)\n(.*?)^```$",
                   re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Block:
    kind: str  # "new file" or "at the end of"
    path: str  # repository path, e.g. shared/kgrag/methods/onehop/pipeline.py
    code: str

    @property
    def module(self) -> str:
        """The dotted module name of ``path`` (``shared/`` is on ``sys.path``)."""
        relative = Path(self.path).relative_to("shared").with_suffix("")
        parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
        return ".".join(parts)


def recipe_blocks() -> list[Block]:
    return [Block(kind, path, code)
            for kind, path, code in BLOCK.findall(CONTRIBUTING.read_text(encoding="utf-8"))]


def blocks_under(prefix: str) -> list[Block]:
    return [b for b in recipe_blocks() if b.path.startswith(prefix)]


METHOD_BLOCKS = blocks_under("shared/kgrag/methods/")
BACKEND_BLOCKS = blocks_under("shared/kgrag/graph/")


def install(blocks: list[Block], root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Write the new files under ``root`` where their packages find them, then run the blocks
    appended to existing modules (their registrations) in those modules' namespaces."""
    for block in blocks:
        if block.kind == "new file":
            target = root / block.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
    for package in ("kgrag.methods", "kgrag.graph"):
        module = importlib.import_module(package)
        extra = root / "shared" / Path(*package.split("."))
        monkeypatch.setattr(module, "__path__", [*module.__path__, str(extra)])
    for block in blocks:
        if block.kind == "at the end of":
            assert (ROOT / block.path).is_file(), f"{block.path} does not exist"
            namespace = dict(vars(importlib.import_module(block.module)))
            exec(compile(block.code, block.path, "exec"), namespace)


@pytest.fixture
def recipes(tmp_path, monkeypatch):
    """The method and backend of CONTRIBUTING.md, installed for one test and removed after."""
    from kgrag.graph import backends
    from kgrag.methods import registry

    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    monkeypatch.setattr(backends, "_BACKENDS", dict(backends._BACKENDS))
    before = set(sys.modules)
    install(METHOD_BLOCKS + BACKEND_BLOCKS, tmp_path / "recipes", monkeypatch)
    yield tmp_path / "recipes"
    for name in set(sys.modules) - before:
        if name.startswith(("kgrag.methods.onehop", "kgrag.graph.snapshot")):
            del sys.modules[name]
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and hasattr(sys.modules[parent], child):
                delattr(sys.modules[parent], child)  # the attribute an import sets
    for cache in ("langchain_kgrag.base", "llama_index_kgrag.base"):
        module = sys.modules.get(cache)
        made = getattr(module, "_RETRIEVERS", None) or getattr(module, "_MADE", None) or {}
        for key in [k for k in made if "onehop" in (k if isinstance(k, tuple) else (k,))]:
            del made[key]


@pytest.fixture(scope="module")
def kg():
    from kgrag.graph import read_triples

    return read_triples(MOVIES)


def scripted(*replies: str):
    """An LLM (``prompt -> str``) replying ``replies`` in order, keeping the prompts."""
    queue = list(replies)

    def llm(prompt: str) -> str:
        llm.prompts.append(prompt)  # type: ignore[attr-defined]
        return queue.pop(0)

    llm.prompts = []  # type: ignore[attr-defined]
    return llm


def test_the_recipes_touch_only_the_files_they_name():
    """A sixth method: four new files in its folder plus one registry entry; a backend: one
    new file plus one registry line. Nothing else of the project is edited."""
    method = {(b.kind, b.path) for b in METHOD_BLOCKS}
    assert method == {("new file", f"shared/kgrag/methods/onehop/{name}.py")
                      for name in ("__init__", "config", "prompts", "pipeline")} | {
        ("at the end of", "shared/kgrag/methods/registry.py")}
    assert {(b.kind, b.path) for b in BACKEND_BLOCKS} == {
        ("new file", "shared/kgrag/graph/snapshot.py"),
        ("at the end of", "shared/kgrag/graph/backends.py")}
    assert len(recipe_blocks()) == len(METHOD_BLOCKS) + len(BACKEND_BLOCKS)


def test_the_recipe_files_pass_the_projects_lint(tmp_path):
    """The blocks are code a contributor copies: they meet the repository's ruff rules."""
    for block in recipe_blocks():
        target = tmp_path / block.path
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a", encoding="utf-8") as out:
            out.write(block.code)
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff is not installed next to this Python")
    done = subprocess.run([str(ruff), "check", "--config", str(ROOT / "pyproject.toml"),
                           "--select", "E,F,W,I", "--ignore", "F821", str(tmp_path)],
                          capture_output=True, text=True)
    # F821: a block appended to a module uses that module's names (register_method, Backend)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_method_recipe_gives_the_command_line(recipes, capsys):
    from kgrag.cli import main

    assert main(["ask", str(MOVIES), QUESTION, "--method", "onehop", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "method: onehop  items: 3" in out and "Satoshi Kon" in out
    assert main(["eval", "--list"]) == 0
    assert any(line.startswith("onehop") and "llm-free" in line
               for line in capsys.readouterr().out.splitlines())


def test_the_method_recipe_gives_the_registry_and_the_lifecycle(recipes, kg):
    from kgrag.errors import LLMNotConfiguredError
    from kgrag.methods.registry import get_method, method_names

    spec = get_method("onehop")
    assert "onehop" in method_names() and spec.method_class().__name__ == "OneHop"
    llm = scripted("Satoshi Kon", "Satoshi Kon")
    method = spec.build(kg, llm=llm, top_k=4)
    assert method.config.top_k == 4 and method.config.label == "onehop"
    answer = method.answer(QUESTION)
    assert answer.answers == ["Satoshi Kon"] and len(answer.retrieval.items) == 4
    assert "Tokyo Godfathers" in llm.prompts[0] and QUESTION in llm.prompts[0]
    assert answer.usage.calls == 1
    again = asyncio.run(method.aanswer(QUESTION))
    assert again.answers == ["Satoshi Kon"] and method.total_usage.calls == 2
    with pytest.raises(LLMNotConfiguredError):
        spec.build(kg).answer(QUESTION)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        spec.build(kg, top_k=0)
    custom = spec.build(kg, llm=scripted("x"), prompts={"answer": "{question}|{context}"})
    assert custom.prompts.format("answer", question="q", context="c") == "q|c"


def test_the_method_recipe_gives_the_langchain_adapter(recipes, kg):
    pytest.importorskip("langchain_core")
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from langchain_kgrag import retriever_for

    retriever = retriever_for("onehop").from_graph(kg, top_k=2)
    docs = retriever.invoke(QUESTION)
    assert len(docs) == 2 and all(d.metadata["method"] == "onehop" for d in docs)
    tool = retriever.as_search_tool()
    assert tool.name == "one_hop_search" and "Tokyo Godfathers" in tool.invoke({"query": QUESTION})
    chain = retriever_for("onehop").from_graph(
        kg, llm=FakeListChatModel(responses=["Satoshi Kon"])).answer_chain()
    assert chain.invoke(QUESTION)["answer"] == "Satoshi Kon"


def test_the_method_recipe_gives_the_llama_index_adapter(recipes, kg):
    pytest.importorskip("llama_index.core")
    from llama_index_kgrag import query_engine_for, retriever_for

    nodes = retriever_for("onehop").from_graph(kg).retrieve(QUESTION)
    assert nodes and all("Tokyo Godfathers" in n.node.get_content() for n in nodes)
    engine = query_engine_for("onehop").from_graph(kg, llm=lambda prompt: "Satoshi Kon")
    response = engine.query(QUESTION)
    assert str(response) == "Satoshi Kon" and response.source_nodes
    assert engine.as_tool().metadata.name == "one_hop_search"


def test_the_backend_recipe_is_offered_by_load_db(recipes, tmp_path, capsys):
    """``kgrag load-db --backend snapshot`` loads (twice, adding), and the snapshot is a graph
    every command reads: the recipe's method answers over it."""
    from kgrag.cli import main
    from kgrag.graph.backends import backend_names, get_backend

    assert "snapshot" in backend_names()
    assert get_backend("snapshot").store_class().__name__ == "SnapshotGraphStore"
    first, second = tmp_path / "first.tsv", tmp_path / "second.tsv"
    first.write_text("Paprika\tdirected_by\tSatoshi Kon\n", encoding="utf-8")
    second.write_text("Paprika\thas_genre\tAnime\nPerfect Blue\tdirected_by\tSatoshi Kon\n",
                      encoding="utf-8")
    directory = tmp_path / "films"
    for file, added in ((first, 1), (second, 2)):
        assert main(["load-db", str(file), "--backend", "snapshot", "--database",
                     str(directory), "--no-progress"]) == 0
        out = capsys.readouterr().out
        assert f"{added} edges added to {directory}" in out
    assert "'edges': 3" in out
    assert main(["ask", str(directory), "Who directed Paprika?", "--method", "onehop"]) == 0
    out = capsys.readouterr().out
    assert "items: 2" in out and "Paprika -> directed_by -> Satoshi Kon" in out
    assert main(["load-db", str(first), "--backend", "snapshot", "--no-progress"]) != 0
    assert "--backend snapshot needs --database (e.g. graphs/films)" in capsys.readouterr().err
