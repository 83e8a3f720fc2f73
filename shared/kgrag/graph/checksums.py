"""Per-file checksums in a saved graph's manifest, so a damaged file is refused, not loaded.

:func:`kgrag.graph.io.save_graph` records ``{"bytes": size, "sha256": digest}`` for every file
it writes beside ``manifest.json``; :func:`kgrag.graph.io.load_graph` checks them before it
parses anything. The structural checks (names are strings, edges sorted, index consistent)
catch much but not all damage: one flipped character in ``nodes.json`` renames an entity, and
a flipped bit in an edge array can keep the order valid. The checksum catches both.

This guards against damage (disk, copy, partial write), not against someone who can write the
folder: they can rewrite the manifest too.

What a load verifies (:func:`kgrag.graph.io.load_graph`): the size of every file it reads,
and the digest of every file it reads except, in a memory-mapped load with the saved index,
the ``.npy`` arrays: that load already checks every element of them against a redundant copy
(each edge against ``out_key`` / ``in_key`` / ``adj_rows``), so a damaged array is refused
without the digest, and hashing ~70 MB per 1M edges would add about a fifth to the start of
every worker (measured: ``benchmarks/graph_checksums.py``, numbers in ``docs/benchmarks.md``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path as FsPath
from typing import Any, Iterable

from kgrag.errors import GraphLoadError

_BLOCK = 1 << 20


def file_digest(path: FsPath) -> str:
    """The SHA-256 of the file at ``path`` (hex), read in 1 MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def file_checksums(folder: FsPath, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"bytes": size, "sha256": digest}}`` for the files ``names`` in ``folder``."""
    return {name: {"bytes": os.path.getsize(folder / name), "sha256": file_digest(folder / name)}
            for name in sorted(names)}


def verify_checksums(root: FsPath, recorded: Any, required: Iterable[str],
                     digest: Iterable[str]) -> None:
    """Every name in ``required`` (the files the load reads) is recorded with its size in
    ``recorded`` and has that size, and every name in ``digest`` has its recorded SHA-256 too;
    else :class:`GraphLoadError`.

    Sizes are compared first (one ``stat`` each), so a truncated file is refused without
    reading it. The caller leaves out of ``digest`` the files it checks completely otherwise
    (a mapped load cross-checks every element of the edge arrays against the saved index), and
    files the load does not read.
    """
    if not isinstance(recorded, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("bytes"), int)
            and isinstance(v.get("sha256"), str) for v in recorded.values()):
        raise GraphLoadError(f"{root}/manifest.json: checksums are not "
                             "{file: {bytes, sha256}}")
    required, digest = set(required), set(digest)
    missing = sorted((required | digest) - set(recorded))
    if missing:
        raise GraphLoadError(f"{root}/manifest.json records no checksum for {missing}")
    for name in sorted(required | digest):
        entry = recorded[name]
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise GraphLoadError(f"{root}/manifest.json: checksum entry {name!r} is not a file "
                                 "name in the folder")
        path = root / name
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):  # a FIFO would block, a device never end
                raise GraphLoadError(f"{path} is not a regular file")
            size = info.st_size
            if size != entry["bytes"]:
                raise GraphLoadError(f"{path} is {size} bytes; the manifest recorded "
                                     f"{entry['bytes']}: the file is truncated, damaged or "
                                     "replaced")
            if name in digest and file_digest(path) != entry["sha256"]:
                raise GraphLoadError(f"{path} does not match its checksum in the manifest: the "
                                     "file is damaged or was changed after the save")
        except FileNotFoundError:
            raise GraphLoadError(f"{root} is missing {name}") from None
        except OSError as exc:
            raise GraphLoadError(f"{path} cannot be read: {exc}") from None


def refresh_checksums(folder: Any) -> None:
    """Record new checksums in the manifest of the saved graph in ``folder``, for every file it
    lists: after editing a file by hand (a description in ``extras.json``), or to simulate a
    writer that does so in tests. The load's structural checks still apply."""
    root = FsPath(folder)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    names = [name for name in os.listdir(root) if name != "manifest.json"
             and os.path.isfile(root / name)]
    manifest["checksums"] = file_checksums(root, names)
    (root / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False),
                                        encoding="utf-8")
