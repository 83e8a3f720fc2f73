"""Fast reading of plain triples files: whole blocks at a time, names decoded once per distinct value.

:meth:`KnowledgeGraph.from_csv` first tries :func:`read_plain_triples`. It handles the common case
-- UTF-8 text, exactly three fields per line, no quoting, no carriage returns, no blank lines
except at the end -- with byte-level numpy checks and C-level ``bytes.split``; each distinct name
is decoded and normalised once instead of once per occurrence. Anything else (a malformed or
blank line, quotes in a comma file, ``\\r``, an over-long field, undecodable bytes, a name that
normalises to empty) makes it return ``None``, and the caller falls back to the line-by-line
:class:`~kgrag.graph.io.TripleReader`, which gives the exact error (file and line) or skips.

The result is identical to the line-by-line path: the same names, normalised the same way, and
node / relation ids numbered in order of first appearance (head before tail on each line).
"""

from __future__ import annotations

import codecs
import csv
import itertools
from typing import Any

import numpy as np

from kgrag.graph.io import _looks_like_header, sniff_separator

BLOCK_BYTES = 1 << 20  # small blocks keep the transient bytes objects few
_QUOTED_SEPARATORS = (",", ";")  # the separators TripleReader reads with csv quoting


class _NotPlain(Exception):
    """The file needs the line-by-line reader."""


class _Interner:
    """Maps raw byte strings to ids of their normalised names, in order of first appearance."""

    def __init__(self, encoding: str) -> None:
        from kgrag.graph.memory import normalize_name

        self._normalize = normalize_name
        self.encoding = encoding
        self.raw_to_id: dict[bytes, int] = {}
        self.name_to_id: dict[str, int] = {}

    def add_new(self, raw_values: Any) -> None:
        """Register, in order, the values not seen before."""
        raw_to_id, name_to_id = self.raw_to_id, self.name_to_id
        for raw in dict.fromkeys(raw_values):
            if raw in raw_to_id:
                continue
            try:
                name = self._normalize(raw.decode(self.encoding).strip())
            except UnicodeDecodeError:
                raise _NotPlain from None
            if not name:
                raise _NotPlain
            raw_to_id[raw] = name_to_id.setdefault(name, len(name_to_id))

    def ids(self, raw_values: list[bytes]) -> np.ndarray:
        return np.fromiter(map(self.raw_to_id.__getitem__, raw_values), dtype=np.int32,
                           count=len(raw_values))

    @property
    def names(self) -> list[str]:
        return list(self.name_to_id)


def read_plain_triples(path: str, *, sep: str | None, header: bool | None, encoding: str
                       ) -> tuple[list[str], list[str], np.ndarray, np.ndarray, np.ndarray] | None:
    """``(node_names, relation_names, heads, rels, tails)`` of a plain file, or ``None``.

    ``None`` means "use the line-by-line reader" (see the module docstring); the edge arrays are
    in file order and not yet de-duplicated.
    """
    try:
        if codecs.lookup(encoding).name != "utf-8":
            return None
    except LookupError:
        return None
    try:
        return _read(path, sep, header, encoding)
    except _NotPlain:
        return None


def _read(path: str, sep: str | None, header: bool | None, encoding: str):
    nodes, relations = _Interner(encoding), _Interner(encoding)
    heads: list[np.ndarray] = []
    rels: list[np.ndarray] = []
    tails: list[np.ndarray] = []
    sep_b = b""
    first_line_pending = True
    field_limit = csv.field_size_limit()
    with open(path, "rb") as fh:
        rest = b""
        while True:
            data = fh.read(BLOCK_BYTES)
            at_end = not data
            block = rest + data
            if not at_end:
                cut = block.rfind(b"\n") + 1
                block, rest = block[:cut], block[cut:]
                if not block:
                    continue
            else:
                rest = b""
                block = block.rstrip(b"\n")  # only trailing blank lines are allowed
                if not block:
                    break
                block += b"\n"
            if b"\r" in block or b"\x00" in block:
                raise _NotPlain
            if first_line_pending:
                first_line_pending = False
                if block.startswith(codecs.BOM_UTF8):  # dropped, as the line reader does
                    block = block[len(codecs.BOM_UTF8):]
                if block.startswith(b"\n"):
                    raise _NotPlain  # leading blank lines: let the exact reader deal with them
                line_end = block.index(b"\n")
                try:
                    first = block[:line_end].decode(encoding)
                except UnicodeDecodeError:
                    raise _NotPlain from None
                if not first.strip():
                    raise _NotPlain
                use_sep = sep if sep is not None else sniff_separator(first + "\n")
                if len(use_sep) != 1:
                    raise _NotPlain
                sep_b = use_sep.encode(encoding)
                if len(sep_b) != 1 or sep_b in (b"\n", b"\r", b'"'):
                    raise _NotPlain
                quoted = use_sep in _QUOTED_SEPARATORS
                if header or (header is None and _looks_like_header(first.split(use_sep), (0, 1, 2))):
                    block = block[line_end + 1:]
                    if not block:
                        continue
            if quoted and b'"' in block:
                raise _NotPlain
            _check_lines(block, sep_b[0], field_limit)
            fields = block[:-1].replace(b"\n", sep_b).split(sep_b)
            h, r, t = fields[0::3], fields[1::3], fields[2::3]
            del fields
            nodes.add_new(itertools.chain.from_iterable(zip(h, t)))
            relations.add_new(r)
            heads.append(nodes.ids(h))
            rels.append(relations.ids(r))
            tails.append(nodes.ids(t))
            if at_end:
                break

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    node_names, relation_names = nodes.names, relations.names
    del nodes, relations  # the raw-bytes dictionaries are no longer needed
    return node_names, relation_names, joined(heads), joined(rels), joined(tails)


def _check_lines(block: bytes, sep_byte: int, field_limit: int) -> None:
    """Every line of ``block`` (which ends with a newline) has exactly two separators, is not
    empty and is short enough that no field can exceed csv's field size limit."""
    buf = np.frombuffer(block, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    seps = np.flatnonzero(buf == sep_byte)
    per_line = np.diff(np.searchsorted(seps, newlines), prepend=0)
    if np.any(per_line != 2):
        raise _NotPlain
    lengths = np.diff(newlines, prepend=-1) - 1
    if lengths.max() > field_limit:
        raise _NotPlain
