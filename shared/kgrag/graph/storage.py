"""Saving and loading an in-memory graph: a folder with a JSON manifest, the name tables as JSON
and the edges as ``.npy`` (never pickle), optionally with the adjacency index so a load can map
it read-only and share it between processes (:mod:`kgrag.graph.mapped`).

    save_graph(kg, "movies_kg")
    kg = load_graph("movies_kg", mmap=True)
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path as FsPath
from typing import Any

import numpy as np

from kgrag.errors import GraphFormatError, GraphLoadError
from kgrag.graph.io import check_names, read_json_file
from kgrag.graph.memory import KnowledgeGraph

log = logging.getLogger(__name__)

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "load_graph", "save_graph"]

FORMAT_NAME = "kgrag.KnowledgeGraph"
#: 2: the manifest records a checksum per file (:mod:`kgrag.graph.checksums`); version 1 saves
#: (no checksums) still load, with a warning.
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_EDGE_ARRAYS = ("heads", "rels", "tails")


def _write_json(path: FsPath, obj: Any) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")


def save_graph(kg: KnowledgeGraph, directory: Any, *, index: bool = True) -> None:
    """Save atomically: write into a temporary sibling directory, then rename into place.

    ``index=True`` also writes the adjacency index (:data:`kgrag.graph.mapped.INDEX_ARRAYS`
    and the single-node adjacency rows), which ``load(..., mmap=True)`` maps instead of
    building it in every process; it takes about 5x the space of the edges alone.
    """
    target = FsPath(directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = FsPath(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name in _EDGE_ARRAYS:
            np.save(tmp / f"{name}.npy", getattr(kg, name), allow_pickle=False)
        index_names: list[str] = []
        if index:
            from kgrag.graph.mapped import save_index

            index_names = save_index(kg, tmp)
        _write_json(tmp / "nodes.json", kg.node_names)
        _write_json(tmp / "relations.json", kg.relation_names)
        _write_json(tmp / "extras.json", {
            "node_descriptions": kg.node_descriptions,
            "relation_descriptions": kg.relation_descriptions,
            "aliases": kg.aliases,
            "relation_labels": kg.relation_labels,
        })
        if kg.annotations:
            _write_json(tmp / "annotations.json", kg.annotations.to_json())
        from kgrag.graph.checksums import file_checksums

        _write_json(tmp / "manifest.json", {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "nodes": kg.num_nodes,
            "edges": kg.num_edges,
            "relations": kg.num_relations,
            **({"index": index_names} if index_names else {}),
            "checksums": file_checksums(tmp, (p.name for p in tmp.iterdir())),
        })
        if target.exists():
            if not (target / "manifest.json").exists() and any(target.iterdir()):
                raise GraphLoadError(
                    f"{target} exists and is not a kgrag graph; not overwriting it")
            backup = target.with_name(target.name + ".old")
            os.replace(target, backup)
            os.replace(tmp, target)
            _remove_tree(backup)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            _remove_tree(tmp)


def _remove_tree(path: FsPath) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)




def _read_json(path: FsPath) -> Any:
    return read_json_file(path, missing=f"{path.parent} is missing {path.name}; not a saved "
                                        "kgrag graph")




def _check_extras(root: FsPath, extras: dict) -> None:
    for key in ("node_descriptions", "relation_descriptions", "aliases", "relation_labels"):
        value = extras.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise GraphLoadError(f"{root}/extras.json: {key} is a {type(value).__name__}, "
                                 "not an object")
        for k, v in value.items():
            ok = isinstance(v, str) if key.endswith("descriptions") else (
                isinstance(v, list) and all(isinstance(x, str) for x in v))
            if not ok:
                raise GraphLoadError(f"{root}/extras.json: {key}[{k!r}] is {v!r:.80}")


def _check_files(root: FsPath, manifest: dict, mmap: bool) -> None:
    """Verify the manifest's checksums of the files the load reads (format version 2), or
    warn that a version-1 save has none. A mapped load of a save with its index checks the
    arrays' sizes here and their every element later (see :mod:`kgrag.graph.checksums`)."""
    if manifest.get("version") == 1:
        log.warning("%s was saved by an older kgrag without checksums: damaged files may load "
                    "unnoticed; save the graph again to add them", root)
        return
    from kgrag.graph.checksums import verify_checksums
    from kgrag.graph.mapped import INDEX_ARRAYS

    tables = ["nodes.json", "relations.json", "extras.json"]
    if (root / "annotations.json").exists():
        tables.append("annotations.json")
    edges = [f"{name}.npy" for name in _EDGE_ARRAYS]
    index = manifest.get("index") or []
    if not isinstance(index, list) or not all(isinstance(name, str) for name in index):
        raise GraphLoadError(f"{root}/manifest.json: index is not a list of array names")
    if not mmap:  # reads the tables and the edges, not the index
        verify_checksums(root, manifest.get("checksums"), tables + edges, tables + edges)
    elif set(INDEX_ARRAYS) <= set(index):  # every array element is cross-checked later
        verify_checksums(root, manifest.get("checksums"),
                         tables + edges + [f"{name}.npy" for name in index], tables)
    else:
        verify_checksums(root, manifest.get("checksums"), tables + edges, tables + edges)


def load_graph(directory: Any, *, mmap: bool = False) -> KnowledgeGraph:
    """Read a folder written by :func:`save_graph`; ``mmap=True`` maps its arrays read-only
    (shared between processes; see :mod:`kgrag.graph.mapped`)."""
    root = FsPath(directory)
    if not root.is_dir():
        raise GraphLoadError(f"{root} is not a directory")
    manifest = _read_json(root / "manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise GraphLoadError(f"{root} does not hold a kgrag graph (manifest format "
                             f"{manifest.get('format') if isinstance(manifest, dict) else None!r})")
    if manifest.get("version") not in _READABLE_VERSIONS:
        raise GraphLoadError(
            f"{root}: unsupported graph format version {manifest.get('version')!r}")
    _check_files(root, manifest, mmap)
    nodes = _read_json(root / "nodes.json")
    relations = _read_json(root / "relations.json")
    extras = _read_json(root / "extras.json")
    if not (isinstance(nodes, list) and isinstance(relations, list) and isinstance(extras, dict)):
        raise GraphLoadError(f"{root}: name tables have the wrong shape")
    check_names(nodes, f"{root}/nodes.json")
    check_names(relations, f"{root}/relations.json")
    _check_extras(root, extras)
    annotations = None
    if (root / "annotations.json").exists():
        from kgrag.graph.annotations import GraphAnnotations

        try:
            annotations = GraphAnnotations.from_json(_read_json(root / "annotations.json"))
        except (AttributeError, TypeError, ValueError) as exc:
            raise GraphLoadError(f"{root}/annotations.json is inconsistent: {exc}") from None
    if mmap:
        from kgrag.graph.mapped import load_mapped

        if len(nodes) != manifest.get("nodes") or len(relations) != manifest.get("relations"):
            raise GraphLoadError(f"{root}: name tables do not match the manifest")
        try:
            return load_mapped(KnowledgeGraph, root, manifest, nodes, relations,
                               {**extras, "annotations": annotations})
        except (GraphFormatError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GraphLoadError(f"{root} is inconsistent: {exc}") from None
    from kgrag.graph.mapped import npy_layout

    arrays = {}
    for name in _EDGE_ARRAYS:
        if (root / f"{name}.npy").exists():
            # the header's shape is checked against the file size before numpy allocates it
            npy_layout(root / f"{name}.npy", what=f"{root}/{name}.npy")
        try:
            arr = np.load(root / f"{name}.npy", allow_pickle=False)
        except FileNotFoundError:
            raise GraphLoadError(f"{root} is missing {name}.npy") from None
        except (ValueError, OSError, EOFError) as exc:
            raise GraphLoadError(f"{root}/{name}.npy is corrupted: {exc}") from None
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or len(arr) != manifest.get("edges"):
            raise GraphLoadError(f"{root}/{name}.npy does not match the manifest")
        arrays[name] = arr
    if len(nodes) != manifest.get("nodes") or len(relations) != manifest.get("relations"):
        raise GraphLoadError(f"{root}: name tables do not match the manifest")
    from kgrag.graph.mapped import check_edges

    # save writes the edges sorted and unique: anything else is damage, which the constructor
    # would otherwise sort into a different graph (the mapped load refuses it the same way)
    check_edges(root, arrays["heads"], arrays["rels"], arrays["tails"], len(nodes),
                len(relations))
    try:
        return KnowledgeGraph(nodes, relations, arrays["heads"], arrays["rels"], arrays["tails"],
                   node_descriptions=extras.get("node_descriptions"),
                   relation_descriptions=extras.get("relation_descriptions"),
                   aliases=extras.get("aliases"), relation_labels=extras.get("relation_labels"),
                   annotations=annotations)
    except (GraphFormatError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GraphLoadError(f"{root} is inconsistent: {exc}") from None
