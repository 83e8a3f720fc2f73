"""The layering of DESIGN.md, checked on the import graph of every module.

Every ``import`` statement of ``kgrag``, ``langchain_kgrag`` and ``llama_index_kgrag`` counts,
including those inside functions (lazy imports still couple modules); only imports under
``if TYPE_CHECKING:`` are left out (they never run). Dynamic imports by dotted-path string
(``importlib.import_module``, used for optional command modules) are not statements and are
not seen. The checks:

* no import cycle between modules;
* no import up the layers (``LAYERS`` below, lowest first): the ports never import methods, a
  method never imports another method, nothing below the application layer (``kgrag.commands``,
  every ``kgrag`` subcommand, and ``kgrag.cli``, the entry point) imports it;
* the core never imports LangChain or LlamaIndex at module level.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"kgrag": ROOT / "shared" / "kgrag", "langchain_kgrag": ROOT / "langchain_kgrag",
            "llama_index_kgrag": ROOT / "llama_index_kgrag"}

#: Layers, lowest first; a module belongs to the layer of the longest prefix that names it.
#: A module may import its own layer (except another method) and the layers below.
LAYERS: list[tuple[str, ...]] = [
    ("kgrag.errors", "kgrag.context", "kgrag.text", "kgrag._version", "kgrag.data",
     "kgrag.compiled"),
    ("kgrag.llm", "kgrag.embed", "kgrag.graph"),
    ("kgrag.linking", "kgrag.questions", "kgrag.viz"),
    ("kgrag.methods",),
    ("kgrag.eval", "kgrag.finetune"),
    ("kgrag.commands", "kgrag.cli"),
    ("kgrag",),  # the package's __init__: re-exports the public API
    ("langchain_kgrag", "llama_index_kgrag"),
]

FRAMEWORKS = ("langchain", "langchain_core", "langchain_community", "langchain_neo4j",
              "llama_index")


def _modules() -> dict[str, Path]:
    found = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, bool]]:
    """``(imported module, at module level)`` for every import statement of one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    top_level = {id(n) for n in tree.body}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from package import submodule`` depends on the submodule only; any other name
            # comes from the package's ``__init__``
            names = [f"{base}.{alias.name}" for alias in node.names]
            if not all(n in modules for n in names):
                found.append((base, id(node) in top_level))
            found += [(n, id(node) in top_level) for n in names]
    return found


def _graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[str, bool]]]]:
    modules = _modules()
    raw = {name: _imports(name, path, modules) for name, path in modules.items()}
    edges = {name: {target for target, _ in found if target in modules and target != name}
             for name, found in raw.items()}
    return edges, raw


def _layer(module: str) -> int:
    best, best_len = None, -1
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = level, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


def _method(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["kgrag", "methods"] and len(parts) > 2 and parts[2] not in ("base",
                                                                               "config",
                                                                               "registry"):
        return parts[2]
    return None


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_checker_sees_cycles_and_layers():
    """The helpers find what they must (so the checks below can fail)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert _layer("kgrag.graph.memory") < _layer("kgrag.linking.linker") < _layer(
        "kgrag.methods.simgrag.search") < _layer("kgrag.commands.simgrag")
    assert _layer("kgrag.commands.eval") > _layer("kgrag.eval.runner")
    edges, raw = _graph()
    # a lazy import inside a function counts: EntityLinker.from_graph imports kgrag.embed lazily
    assert ("kgrag.embed", False) in raw["kgrag.linking.linker"]
    assert "kgrag.graph.memory" in edges["kgrag.graph.files"]


def test_no_import_cycles():
    edges, _ = _graph()
    cycles = _cycles(edges)
    detail = "\n".join(
        " <-> ".join(c) + "\n    " + "; ".join(f"{a} -> {b}" for a in c for b in sorted(edges[a])
                                             if b in c)
        for c in cycles)
    assert not cycles, f"import cycles:\n{detail}"


def test_no_upward_imports():
    edges, _ = _graph()
    upward = []
    for module, targets in edges.items():
        for target in targets:
            if _layer(target) > _layer(module):
                upward.append(f"{module} -> {target}")
            own, other = _method(module), _method(target)
            if own and other and own != other:
                upward.append(f"{module} -> {target} (a method imports another method)")
    assert not upward, "imports up the layers:\n" + "\n".join(sorted(upward))


def test_core_never_imports_frameworks_at_module_level():
    _, raw = _graph()
    offenders = [f"{module} imports {target}" for module, found in raw.items()
                 if module.split(".")[0] == "kgrag"
                 for target, top_level in found
                 if top_level and target.split(".")[0] in FRAMEWORKS]
    assert not offenders, "\n".join(offenders)


def test_per_package_dependency_summary_is_stable():
    """Which package imports which: the ports import no method, eval or command module."""
    edges, _ = _graph()
    deps: dict[str, set[str]] = defaultdict(set)
    application = _layer("kgrag.commands")
    for module, targets in edges.items():
        if _layer(module) >= application:
            continue
        for target in targets:
            deps[".".join(module.split(".")[:2])].add(".".join(target.split(".")[:2]))
    for port in ("kgrag.graph", "kgrag.embed", "kgrag.linking", "kgrag.llm", "kgrag.context",
                 "kgrag.text"):
        assert not deps[port] & {"kgrag.methods", "kgrag.eval", "kgrag.commands",
                                 "kgrag.cli"}, (port, sorted(deps[port]))
