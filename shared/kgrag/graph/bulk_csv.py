"""Fast reading of plain triples files: whole blocks at a time, names decoded once per distinct
value.

:func:`~kgrag.graph.conversions.read_triples` first tries :func:`read_plain_triples`. It handles the
common case -- UTF-8 text, exactly three fields per line, no quoting, no carriage returns, no blank
lines except at the end -- with byte-level numpy checks and C-level ``bytes.split``; each distinct
name is decoded and normalised once instead of once per occurrence. Anything else (a malformed or
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

import numpy as np

from kgrag.graph.io import _looks_like_header, sniff_separator

BLOCK_BYTES = 1 << 20  # a block's transient bytes objects and offset arrays stay a few times this
SHORT_BLOCK_FACTOR = 4  # after a block of only short fields (no bytes objects), read 4x larger
_QUOTED_SEPARATORS = (",", ";")  # the separators TripleReader reads with csv quoting


class _NotPlain(Exception):
    """The file needs the line-by-line reader."""


class _Interner:
    """Maps raw byte strings to ids of their normalised names, in order of first appearance.

    Only distinct raw values are decoded and normalised; two raw values with the same
    normalised name (extra spaces, another Unicode normal form) get the same id. A block's
    fields of at most 8 bytes (typical of id-like names) are interned without one Python
    operation per field: gathered from the buffer into one exact uint64 key each, grouped by a
    stable sort, and only the distinct values are looked up in the dictionary. Longer fields
    cost one C-level ``dict.setdefault`` each (see :meth:`_ids_by_dict`).
    """

    _NEW = 1 << 40  # dictionary values at or above this mark raw values first seen in this block

    def __init__(self, encoding: str) -> None:
        from kgrag.text.names import normalize_name

        self._normalize = normalize_name
        self.encoding = encoding
        self.raw_to_id: dict[bytes, int] = {}
        self.name_to_id: dict[str, int] = {}

    def ids(self, block: bytes, starts: np.ndarray, lengths: np.ndarray,
            raw_values: list[bytes] | None = None) -> np.ndarray:
        """Ids (int32) of the fields ``block[starts[i]:starts[i] + lengths[i]]``, registering new
        values in order of first appearance. Fields longer than 8 bytes need ``raw_values``,
        the same fields as ``bytes``."""
        n = len(starts)
        if n == 0:
            return np.empty(0, np.int32)
        if int(lengths.max()) > 8:
            if raw_values is None or len(raw_values) != n:
                raise ValueError("fields longer than 8 bytes need raw_values")
            return self._ids_by_dict(raw_values)
        keys = _short_keys(block, starts, lengths)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        del keys
        first_of_group = np.empty(n, dtype=bool)
        first_of_group[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first_of_group[1:])
        del ordered
        group = np.cumsum(first_of_group) - 1  # distinct-value index of each sorted position
        first = order[first_of_group]  # position of each distinct value's first occurrence
        by_appearance = np.argsort(first, kind="stable")
        in_order = first[by_appearance]
        distinct = [block[s:s + k] for s, k in zip(starts[in_order].tolist(),
                                                   lengths[in_order].tolist())]
        group_ids = np.empty(len(first), np.int32)
        group_ids[by_appearance] = self._ids_by_dict(distinct)
        out = np.empty(n, np.int32)
        out[order] = group_ids[group]
        return out

    def _ids_by_dict(self, raw_values: list[bytes]) -> np.ndarray:
        """Ids of ``raw_values`` with one ``dict.setdefault`` each: a value not seen before is
        stored with the mark ``_NEW + its position``, so its first occurrences are found with
        numpy, and only those are decoded, normalised and given their id."""
        n = len(raw_values)
        raw_to_id = self.raw_to_id
        found = np.fromiter(map(raw_to_id.setdefault, raw_values, itertools.count(self._NEW)),
                            dtype=np.int64, count=n)
        is_new = found >= self._NEW
        if not is_new.any():
            return found.astype(np.int32)
        position = found - self._NEW
        first_seen = np.flatnonzero(is_new & (position == np.arange(n)))
        name_to_id, name = self.name_to_id, self._name
        lookup = np.empty(n, np.int64)
        for i in first_seen.tolist():  # values new in this block, in order of first appearance
            raw = raw_values[i]
            lookup[i] = raw_to_id[raw] = name_to_id.setdefault(name(raw), len(name_to_id))
        found[is_new] = lookup[position[is_new]]
        return found.astype(np.int32)

    def _name(self, raw: bytes) -> str:
        try:
            name = self._normalize(raw.decode(self.encoding).strip())
        except UnicodeDecodeError:
            raise _NotPlain from None
        if not name:
            raise _NotPlain
        return name

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
    block_bytes = BLOCK_BYTES
    with open(path, "rb") as fh:
        rest = b""
        while True:
            data = fh.read(block_bytes)
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
                if header or (header is None and _looks_like_header(first.split(use_sep),
                                                                    (0, 1, 2))):
                    block = block[line_end + 1:]
                    if not block:
                        continue
            if quoted and b'"' in block:
                raise _NotPlain
            newlines, seps = _check_lines(block, sep_b[0], field_limit)
            line_starts = np.empty(len(newlines), np.int64)
            line_starts[0] = 0
            line_starts[1:] = newlines[:-1] + 1
            first_sep, second_sep = seps[0::2], seps[1::2]
            rel_lengths = second_sep - first_sep - 1
            # heads and tails interleaved (head, tail, head, tail, ...): ids in order of appearance
            node_starts = np.column_stack((line_starts, second_sep + 1)).ravel()
            node_lengths = np.column_stack((first_sep - line_starts,
                                            newlines - second_sep - 1)).ravel()
            fields = rel_fields = None
            block_bytes = BLOCK_BYTES * SHORT_BLOCK_FACTOR
            if max(int(rel_lengths.max()), int(node_lengths.max())) > 8:  # needs bytes objects
                block_bytes = BLOCK_BYTES
                fields = block[:-1].replace(b"\n", sep_b).split(sep_b)
                rel_fields = fields[1::3]
                del fields[1::3]  # head, tail, head, tail, ...
            rels.append(relations.ids(block, first_sep + 1, rel_lengths, rel_fields))
            del rel_fields
            node_ids = nodes.ids(block, node_starts, node_lengths, fields)
            del fields
            heads.append(node_ids[0::2])
            tails.append(node_ids[1::2])
            if at_end:
                break

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    node_names, relation_names = nodes.names, relations.names
    del nodes, relations  # the raw-bytes dictionaries are no longer needed
    return node_names, relation_names, joined(heads), joined(rels), joined(tails)


def _short_keys(block: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """One uint64 per field of at most 8 bytes, equal exactly when the fields' bytes are equal:
    the field zero-padded to 8 bytes (fields hold no NUL bytes, so padding cannot create
    equality)."""
    buf = np.frombuffer(block, dtype=np.uint8)
    chars = np.zeros((len(starts), 8), dtype=np.uint8)
    last = len(buf) - 1
    for j in range(int(lengths.max())):  # column by column: transient arrays of one entry per field
        column = buf[np.minimum(starts + j, last)]
        column[lengths <= j] = 0
        chars[:, j] = column
    return chars.view(np.uint64).ravel()


def _check_lines(block: bytes, sep_byte: int, field_limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Every line of ``block`` (which ends with a newline) has exactly two separators, is not
    empty and is short enough that no field can exceed csv's field size limit. Returns the
    positions of the newlines and of the separators."""
    buf = np.frombuffer(block, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    seps = np.flatnonzero(buf == sep_byte)
    per_line = np.diff(np.searchsorted(seps, newlines), prepend=0)
    if np.any(per_line != 2):
        raise _NotPlain
    lengths = np.diff(newlines, prepend=-1) - 1
    if lengths.max() > field_limit:
        raise _NotPlain
    return newlines, seps
