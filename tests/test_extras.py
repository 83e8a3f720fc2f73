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
    assert extras["all"] == ["kgrag[langchain,llama-index]"]
    assert "all" in (ROOT / "scripts" / "setup.sh").read_text().split('-e ".[')[1].split("]")[0]


def test_torch_is_declared_without_a_version():
    """The neural executor needs torch, so the package says so; a version would make pip
    replace the CPU build scripts/setup.sh installs first with whatever wheel it resolves."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch" in project["dependencies"]
    assert not [d for d in project["dependencies"] if d.startswith("torch") and d != "torch"]
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.index('"torch==') < setup.index("pip install -q -e")  # CPU build first
