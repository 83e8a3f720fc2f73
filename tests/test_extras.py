"""The core installs and runs without either framework; each adapter package says which extra
to install when its framework is missing (simulated in a subprocess: a module set to ``None``
in ``sys.modules`` cannot be imported); the three packages ship ``py.typed``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = textwrap.dedent("""
    import sys
    for name in {blocked!r}:
        sys.modules[name] = None  # any import of it now raises ImportError
""")


def run(code: str, blocked: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'shared'}{os.pathsep}{ROOT}",
           "HF_HUB_OFFLINE": "1"}
    script = BLOCK.format(blocked=blocked) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], check=False, capture_output=True,
                          text=True,
                          env=env, timeout=120, cwd=ROOT)


FRAMEWORKS = ["langchain_core", "langchain", "langchain_neo4j", "langchain_classic",
              "llama_index", "llama_index.core"]


def test_core_runs_without_either_framework():
    out = run("""
        from kgrag import KnowledgeGraph
        from kgrag.methods.ultrag import UltRAG
        kg = KnowledgeGraph.from_triples([("Paprika", "directed_by", "Satoshi Kon")])
        llm = lambda prompt: '<query>"Satoshi Kon" -> directed_by_inv</query>'
        method = UltRAG(kg, llm=llm, linking="exact", executor="symbolic")
        print([e.name for e in method.retrieve("Which films did Satoshi Kon direct?").items])
        print(sorted(m for m in sys.modules if m.startswith(("langchain", "llama_index"))
                     and sys.modules[m] is not None))
    """, FRAMEWORKS)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["['Paprika']", "[]"]


@pytest.mark.parametrize("package, blocked, extra", [
    ("langchain_kgrag", ["langchain_core"], "kgrag[langchain]"),
    ("llama_index_kgrag", ["llama_index", "llama_index.core"], "kgrag[llama-index]"),
])
def test_adapter_without_its_framework_names_the_extra(package, blocked, extra):
    out = run(f"import {package}", blocked)
    assert out.returncode != 0
    assert "ImportError" in out.stderr and f"pip install '{extra}'" in out.stderr


def test_py_typed_in_all_three_packages():
    import tomllib

    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    for package, folder in [("kgrag", ROOT / "shared" / "kgrag"),
                            ("langchain_kgrag", ROOT / "langchain_kgrag"),
                            ("llama_index_kgrag", ROOT / "llama_index_kgrag")]:
        assert (folder / "py.typed").is_file() and "py.typed" in package_data[package]


def test_extras_declare_the_frameworks():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = " ".join(project["dependencies"])
    assert "langchain" not in deps and "llama-index" not in deps
    extras = project["optional-dependencies"]
    assert any(d.startswith("langchain-core") for d in extras["langchain"])
    assert any(d.startswith("llama-index-core") for d in extras["llama-index"])
    assert extras["all"] == ["kgrag[langchain,llama-index,onnx,fast,viz]"]
    installed = (ROOT / "scripts" / "setup.sh").read_text().split('-e ".[')[1].split("]")[0]
    assert {"all", "langchain-neo4j", "viz"} <= set(installed.split(","))


def test_a_retriever_user_does_not_install_what_only_some_need():
    """Issue 29, item 2: matplotlib only for PNG drawing (``viz``), langchain-neo4j only for
    Neo4jGraph / GraphDocument inputs; the fast paths (ONNX Runtime, numba) with ``all``."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert not [d for d in project["dependencies"] if d.startswith("matplotlib")]
    assert extras["viz"] == ["matplotlib>=3.7"]
    assert extras["langchain"] == ["langchain-core>=0.3"]
    assert "langchain-neo4j>=0.4" in extras["langchain-neo4j"]
    assert any(d.startswith("onnxruntime") for d in extras["onnx"])
    assert any(d.startswith("numba") for d in extras["fast"])


def test_drawing_a_png_without_matplotlib_names_the_extra(tmp_path):
    out = run(f"""
        from kgrag import KnowledgeGraph
        from kgrag.context.types import RetrievalResult, Triple
        from kgrag.viz import render
        result = RetrievalResult("q", [Triple("a", "r", "b", score=1.0)], "stub")
        print(render(result, {str(tmp_path / 'out.html')!r}))
        render(result, {str(tmp_path / 'out.png')!r})
    """, ["matplotlib"])
    assert out.returncode != 0 and out.stdout.strip().endswith("out.html")
    assert "ImportError" in out.stderr and "pip install 'kgrag[viz]'" in out.stderr


def test_torch_is_declared_without_a_version():
    """The neural executor needs torch, so the package says so; a version would make pip
    replace the CPU build scripts/setup.sh installs first with whatever wheel it resolves."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch" in project["dependencies"]
    assert not [d for d in project["dependencies"] if d.startswith("torch") and d != "torch"]
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.index('"torch==') < setup.index("pip install -q -e")  # CPU build first
