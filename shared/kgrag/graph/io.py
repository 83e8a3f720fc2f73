"""Reading text files: triples (:class:`TripleReader`, with separator and header detection),
relation labels and the JSON files of saved graphs and linkers. Nothing here builds a graph:
:func:`kgrag.graph.conversions.read_triples` does, :mod:`kgrag.graph.storage` saves and loads."""

from __future__ import annotations

import csv
import json
import logging
import os
import stat
from pathlib import Path as FsPath
from typing import Any, Iterator, Sequence

from kgrag.errors import (
    EmptyGraphWarning,
    GraphFileNotFoundError,
    GraphFormatError,
    GraphLoadError,
)

log = logging.getLogger(__name__)

_SEPARATORS = ("\t", "|", ",", ";")
#: Column role names. With ``header=None`` a first row is a header only when each of its three
#: fields names the role of *its own* column (head word in the head column, and so on).
HEAD_WORDS = frozenset({"head", "subject", "source", "h", "s", "from", "src", "sub",
                        "head_entity", "entity1", "start", "start_node", "source_node"})
#: Not "type" or "label": those are among the most common relation names in real graphs
#: (``X type Y`` is rdf:type), so a first row "source type target" may well be a triple.
RELATION_WORDS = frozenset({"relation", "predicate", "relationship", "rel", "r", "p", "pred",
                            "edge", "property", "relation_type", "edge_type", "relationship_type"})
TAIL_WORDS = frozenset({"tail", "object", "target", "t", "o", "to", "dst", "obj", "tail_entity",
                        "entity2", "end", "end_node", "target_node"})
_HEADER_WORDS = HEAD_WORDS | RELATION_WORDS | TAIL_WORDS | {"type", "label"}


def sniff_separator(line: str) -> str:
    """The separator of a triples line: tab, then pipe, comma, semicolon (first that splits it)."""
    for sep in _SEPARATORS:
        if sep in line:
            return sep
    raise GraphFormatError(
        f"cannot tell the separator of {line[:80]!r}; pass sep= (tab, '|', ',' or ';')"
    )


def decide_header(row: Sequence[str], columns: Sequence[int] = (0, 1, 2),
                  header: bool | None = None) -> tuple[bool, str]:
    """Whether the first row is a header, and the rule that decided (for logs and errors).

    ``header=True`` / ``False`` force it. With ``header=None`` the row is a header only when
    its head, relation and tail fields are role names of their own columns
    (:data:`HEAD_WORDS`, :data:`RELATION_WORDS`, :data:`TAIL_WORDS`, case-insensitive):
    ``head relation tail``, ``subject predicate object``, ``source relation target``,
    ``h r t``... A row made of column-like words in other places (``source type target``,
    ``type label to``) is read as data, with a warning that names ``header=True``.

    >>> decide_header(["Source", "type", "Target"])[0]
    False
    >>> decide_header(["subject", "predicate", "object"])
    (True, "auto: the first row names the columns' roles ['subject', 'predicate', 'object']")
    """
    if header is not None:
        return bool(header), f"header={bool(header)} was passed"
    values = [row[c].strip().lower() for c in columns if c < len(row)]
    if len(values) == 3 and values[0] in HEAD_WORDS and values[1] in RELATION_WORDS \
            and values[2] in TAIL_WORDS:
        return True, f"auto: the first row names the columns' roles {values}"
    if len(values) == 3 and all(v in _HEADER_WORDS for v in values):
        return False, (f"auto: the first row {values} looks like column names but is not "
                       "head/relation/tail roles in order, so it is read as a triple; pass "
                       "header=True to skip it")
    return False, "auto: the first row is data"


def _looks_like_header(row: Sequence[str], columns: Sequence[int]) -> bool:
    return decide_header(row, columns)[0]


class TripleReader:
    """Iterates ``(head, relation, tail)`` from a delimited file, validating every line.

    ``columns`` picks the three fields: indices, or header names (which implies a header row).
    ``header=None`` detects a header by the rule of :func:`decide_header`; after iterating,
    ``header_rule`` says which rule decided (``header_row`` whether a row was skipped).
    Quoted fields follow the csv module's rules.
    Malformed rows raise :class:`GraphFormatError` with file and line, or with
    ``on_error="skip"`` are skipped and counted in ``skipped``.

    A quoted field that runs over a line break (a stray opening ``"`` in a comma or semicolon
    file: csv would read every following line into one name until the next quote) is
    malformed: a name cannot hold a line break. It raises with the line the quote opened on,
    or is skipped with every line it swallowed counted in ``skipped`` and named in a warning,
    so no line vanishes silently. Text that is not in ``encoding`` raises with the line number
    of the first undecodable byte and a hint to pass ``encoding=``.
    """

    def __init__(self, path: Any, *, sep: str | None = None,
                 columns: Sequence[int | str] | None = None, header: bool | None = None,
                 on_error: str = "raise", encoding: str = "utf-8") -> None:
        if on_error not in ("raise", "skip"):
            raise ValueError("on_error must be 'raise' or 'skip'")
        self.path = str(path)
        if os.path.isdir(self.path):
            raise GraphFormatError("is a directory, not a triples file (pass the file inside it, "
                                   "or load_graph for a saved graph directory)",
                                   path=self.path)
        if not os.path.exists(self.path):
            raise GraphFileNotFoundError("no such triples file", path=self.path)
        if not os.path.isfile(self.path):
            raise GraphFormatError("not a regular file (a pipe or device cannot be read as "
                                   "triples)", path=self.path)
        self.sep, self.columns, self.header = sep, columns, header
        self.on_error, self.encoding = on_error, encoding
        self.skipped = 0
        self.header_rule = "not read yet"
        self.header_row = False

    def __iter__(self) -> Iterator[tuple[str, str, str]]:
        self.skipped = 0
        # "utf-8-sig" reads plain UTF-8 too, and drops the byte-order mark spreadsheet programs
        # write, which would otherwise glue itself to the first header name.
        encoding = "utf-8-sig" if self.encoding.lower().replace("_", "-") in ("utf-8", "utf8") \
            else self.encoding
        with open(self.path, newline="", encoding=encoding) as fh:
            first = ""
            try:
                for first in fh:
                    if first.strip():
                        break
            except UnicodeDecodeError as exc:
                raise self._decode_error(exc) from None
            if not first.strip():
                _warn_no_triples(self.path, "the file is empty")
                return  # empty file: an empty graph
            sep = self.sep or sniff_separator(first)
            fh.seek(0)
            # csv's quote handling would mangle pipe/tab files with stray quotes; only quote CSV.
            if sep in (",", ";"):
                reader = csv.reader(fh, delimiter=sep, quoting=csv.QUOTE_MINIMAL,
                                    skipinitialspace=False)
            else:
                reader = csv.reader(fh, delimiter=sep, quoting=csv.QUOTE_NONE,
                                    skipinitialspace=False)
            cols = self._resolve_columns(None)
            expected = 3 if self.columns is None else None
            header_pending = self.header is not False
            yielded = 0
            previous_end = 0  # the last physical line of the previous row
            spans: list[tuple[int, int]] = []  # (first, last) lines of rows that ran over lines
            try:
                for row in reader:
                    line, previous_end = previous_end + 1, reader.line_num
                    if line < previous_end and _spans_lines(row):
                        # a quoted field ran over line breaks: every line it swallowed is lost
                        # unless it is reported (issue 30 item 7)
                        if self.on_error == "raise":
                            raise GraphFormatError(
                                f"a quoted field opened on line {line} runs over "
                                f"{previous_end - line + 1} lines (to line {previous_end}); a "
                                "stray '\"'? a name cannot hold a line break (quote the whole "
                                "field, or pass sep= for a file that is not CSV)",
                                path=self.path, line=line)
                        spans.append((line, previous_end))
                        self.skipped += previous_end - line + 1
                        continue
                    if not row or all(not f.strip() for f in row):
                        continue
                    if header_pending:
                        header_pending = False
                        if self.header or (
                            self.columns is not None
                            and any(isinstance(c, str) for c in self.columns)
                        ):
                            self.header_row = True
                            self.header_rule = ("header=True was passed" if self.header else
                                                "columns= names header fields")
                            cols = self._resolve_columns(row)
                            continue
                        self.header_row, self.header_rule = decide_header(row, cols)
                        _log_header_rule(self.path, self.header_rule)
                        if self.header_row:
                            continue
                    elif self.header is False and self.header_rule == "not read yet":
                        self.header_rule = "header=False was passed"
                    problem = None
                    if expected is not None and len(row) != expected:
                        problem = (f"expected 3 fields separated by {sep!r}, got {len(row)}; "
                                   + _fields_hint(len(row)))
                    elif len(row) <= max(cols):
                        problem = f"expected at least {max(cols) + 1} fields, got {len(row)}"
                    else:
                        h, r, t = (row[c].strip() for c in cols)
                        if not (h and r and t):
                            problem = "empty head, relation or tail"
                    if problem:
                        if self.on_error == "raise":
                            raise GraphFormatError(problem, path=self.path, line=line)
                        self.skipped += 1
                        continue
                    yielded += 1
                    yield h, r, t
            except csv.Error as exc:
                raise GraphFormatError(str(exc), path=self.path, line=reader.line_num) from exc
            except UnicodeDecodeError as exc:
                raise self._decode_error(exc) from None
        if spans:
            shown = ", ".join(f"{a}-{b}" for a, b in spans[:5]) + (" ..." if len(spans) > 5
                                                                   else "")
            log.warning("%s: skipped %d line(s) inside %d quoted field(s) that ran over line "
                        "breaks (lines %s): a stray '\"'?", self.path,
                        sum(b - a + 1 for a, b in spans), len(spans), shown)
        if self.skipped:
            log.warning("skipped %d malformed line(s) in %s", self.skipped, self.path)
        if not yielded:
            what = ("every line was malformed and skipped" if self.skipped else
                    "only a header row" if self.header_row else "no data rows")
            _warn_no_triples(self.path, what)

    def _decode_error(self, exc: UnicodeDecodeError) -> GraphFormatError:
        """The error for text that is not in ``self.encoding``: with the line of the first
        undecodable byte and the ``encoding=`` hint."""
        line = undecodable_line(self.path, self.encoding)
        return GraphFormatError(
            f"not {self.encoding} text ({exc.reason}); if the file is in another encoding, "
            "pass it as encoding= (e.g. encoding='latin-1' or 'cp1252')",
            path=self.path, line=line)

    def _resolve_columns(self, header_row: Sequence[str] | None) -> tuple[int, int, int]:
        if self.columns is None:
            return (0, 1, 2)
        if len(self.columns) != 3:
            raise ValueError("columns must name exactly three fields: head, relation, tail")
        if all(isinstance(c, int) for c in self.columns):
            return tuple(int(c) for c in self.columns)  # type: ignore[return-value]
        if header_row is None:
            return (0, 1, 2)
        names = [h.strip() for h in header_row]
        resolved = []
        for c in self.columns:
            if isinstance(c, int):
                resolved.append(c)
            elif c in names:
                resolved.append(names.index(c))
            else:
                raise GraphFormatError(f"column {c!r} not in header {names}", path=self.path,
                                       line=1)
        return tuple(resolved)  # type: ignore[return-value]


def _spans_lines(row: Sequence[str]) -> bool:
    """A field of ``row`` holds a line break (only a quoted field can)."""
    return any("\n" in f or "\r" in f for f in row)


def undecodable_line(path: str, encoding: str) -> int | None:
    """The 1-based line of the first byte of ``path`` that ``encoding`` cannot decode, or
    ``None`` when the whole file decodes.

    Decodes incrementally in 64 kB blocks and counts the decoded line breaks, so it works for
    any codec (a multi-byte character split across blocks is not an error).
    """
    import codecs

    decoder = codecs.getincrementaldecoder(encoding)()
    lines = 1
    with open(path, "rb") as fh:
        while True:
            block = fh.read(1 << 16)
            try:
                text = decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                return lines + _prefix_lines(exc)
            lines += text.count("\n")
            if not block:
                return None


def _prefix_lines(exc: UnicodeDecodeError) -> int:
    """Line breaks in the bytes of a block before the undecodable byte (ASCII-compatible codecs:
    the newline byte; for others the count is a lower bound)."""
    data = exc.object[:exc.start]
    return bytes(data).count(b"\n") if isinstance(data, (bytes, bytearray)) else 0


def _log_header_rule(path: str, rule: str) -> None:
    if "looks like column names" in rule:
        log.warning("%s: %s", path, rule)
    else:
        log.info("%s: header detection: %s", path, rule)


def iter_triples(path: Any, **kwargs: Any) -> TripleReader:
    """A :class:`TripleReader` over ``path``; iterate it for ``(head, relation, tail)``."""
    return TripleReader(path, **kwargs)


# ---------------------------------------------------------------------- relation labels
def read_relation_labels(path: Any, *, encoding: str = "utf-8") -> dict[str, list[str]]:
    r"""Relation labels from a second file: JSON ``{"P57": "director" | [labels...]}``, or
    lines ``relation<TAB>label[<TAB>alias...]`` (comma-separated in a ``.csv``; ``#`` comments).

    >>> import os, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> f = os.path.join(tmp.name, "labels.tsv")
    >>> with open(f, "w") as out:
    ...     _ = out.write("P57\tdirector\tdirected by\n# comment\nP161\tcast member\n")
    >>> read_relation_labels(f)
    {'P57': ['director', 'directed by'], 'P161': ['cast member']}
    >>> tmp.cleanup()
    """
    import csv

    p = FsPath(path)
    if not p.exists():
        raise GraphFormatError(f"relation label file {p} does not exist", path=str(p))
    text = p.read_text(encoding=encoding)
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GraphFormatError(f"not JSON: {exc}", path=str(p)) from None
        if not isinstance(data, dict):
            raise GraphFormatError("expected a JSON object {relation: label(s)}", path=str(p))
        return {str(k): [v] if isinstance(v, str) else [str(x) for x in v]
                for k, v in data.items()}
    delimiter = "," if p.suffix.lower() == ".csv" else "\t"
    labels: dict[str, list[str]] = {}
    for number, row in enumerate(csv.reader(text.splitlines(), delimiter=delimiter), start=1):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        names = [c.strip() for c in row[1:] if c.strip()]
        if not names:
            raise GraphFormatError("expected relation and label", path=str(p), line=number)
        labels.setdefault(row[0].strip(), []).extend(names)
    return labels


# ---------------------------------------------------------------------- JSON files
def read_json_file(path: FsPath, *, missing: str | None = None) -> Any:
    """JSON from a saved-index file; every failure is a :class:`GraphLoadError`.

    Refuses what is not a regular file before opening it (opening a FIFO blocks until a writer
    comes, a device may never end), and catches the parser's ``RecursionError`` on deeply nested
    JSON. ``missing`` is the message for an absent file.
    """
    path = FsPath(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise GraphLoadError(f"{path} is not a regular file (a pipe or a device cannot be "
                                 "loaded)")
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GraphLoadError(missing or f"{path} is missing") from None
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError, OSError) as exc:
        # json.JSONDecodeError is a ValueError; RecursionError: nesting deeper than the parser's
        raise GraphLoadError(f"{path} is corrupted: {type(exc).__name__}: {str(exc)[:200]}") \
            from None


def check_names(names: Any, what: str) -> None:
    """Raise :class:`GraphLoadError` unless ``names`` is a list of non-empty strings."""
    if not isinstance(names, list):
        raise GraphLoadError(f"{what} is not a list of names")
    # C-level passes (map) first: millions of names are checked in tens of milliseconds
    if names and (set(map(type, names)) != {str} or min(map(len, names)) == 0
                  or any(map(str.isspace, names))):
        for i, name in enumerate(names):
            if not isinstance(name, str) or not name.strip():
                raise GraphLoadError(f"{what}[{i}] is {name!r}, not a non-empty string")


def _warn_no_triples(path: Any, why: str) -> None:
    """"``path`` holds no triples (``why``)": logged, and emitted as an
    :class:`~kgrag.errors.EmptyGraphWarning` for programs without a logging setup."""
    import warnings

    message = f"{path} holds no triples ({why}): the graph has no edges"
    log.warning("%s", message)
    warnings.warn(message, EmptyGraphWarning, stacklevel=4)


def _fields_hint(found: int) -> str:
    """What to pass when a line has ``found`` fields instead of 3, for the Python API and for
    the ``kgrag`` commands (which take ``--sep`` and ``--columns``)."""
    if found < 3:
        return ("if the fields are separated by another character, pass sep= (command line: "
                "--sep)")
    return ("pass columns= with the head, relation and tail columns (command line: --columns "
            "0,1,2 or header names), or sep= (--sep) if the separator is another one")
