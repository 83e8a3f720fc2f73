"""UltRAG's logical query language: one AST, two surface forms, precise typed errors.

The paper (Fig. 2) has the LLM write tree-shaped conjunctive queries in a small DSL::

    AND(Q189 -> P1_inv, Q192 -> P2_inv) -> P4

* ``x -> r`` is a relation **projection** (left-associative: ``Q1 -> P1 -> P2`` is
  ``(Q1 -> P1) -> P2``); ``r_inv`` traverses the edge backwards.
* ``AND(q1, q2, ...)`` is an n-ary **intersection** (at least two operands).
* A leaf is an entity: ``Q<digits>`` (an entity id), a quoted mention ``"Geoffrey Hinton"``
  (resolved by name or by the entity linker), or a bare name such as ``Satoshi_Kon``.
  A bare entity is not a query: every leaf must be projected at least once.
* Relations are ``P<digits>`` ids, bare names (``directed_by``) or quoted names
  (``"directed by"``), each optionally with an inverse suffix (``_inv``; ``_inverse`` and
  ``_reverse`` are accepted too).
* **Bare names as LLMs write them.** A quote *inside* a word is part of it
  (``Hapoel_Be'er_Sheva_FC``; a quote starts a string only at the start of a token). Several
  words in a row form one name, as written (``Satoshi Kon -> directed_by_inv``,
  ``Q1 -> directed by``), and a parenthesised group of plain words right after a name belongs
  to it (``Team (2014) -> coach_inv``); such a name is read like a quoted mention. Quote a name
  that holds ``->``, a comma, brackets with an arrow inside, or that starts with a quote.
* **Extension (not in the paper's experiments, which use AND only):** ``OR(q1, q2, ...)`` and
  ``NOT(q)``; the paper notes they "could be added". The executor gives them the fuzzy-logic
  semantics of the chosen t-norm. Infix ``and`` / ``or`` (any case) between queries mean the
  same (``a -> r and b -> s``; ``and`` binds tighter than ``or``; both bind looser than
  ``->``). In an entity name, ``and`` / ``or`` are words of the name (``Tom and Jerry ->
  directed_by``): an infix operator needs a query, not a bare entity, on its left.
* Parentheses group: ``(AND(a -> r, b -> s)) -> t``.

The grammar (``WORD`` is a run of characters other than white space, ``( ) ,``, ``→`` and
``->``, not starting with a quote; ``STRING`` is single- or double-quoted with backslash
escapes)::

    query    := conj ( OR conj )*
    conj     := chain ( AND chain )*
    chain    := primary ( "->" relation )*
    primary  := OPERATOR "(" query ( "," query )* [","] ")" | "(" query ")" | entity
    entity   := STRING | name
    relation := STRING [inverse-suffix] | name
    name     := WORD+ [ "(" WORD+ ")" ]

The older BetaE nested-tuple form used by UltraQuery is parsed into the same AST::

    (((Q189, (P1_inv,)), (Q192, (P2_inv,))), (P4,))

``(anchor, (r1, ..., rn))`` is a projection chain (its second element is a tuple of relation
atoms), and a tuple of two or more queries is an intersection. Atoms may be bare or quoted.

Every failure is a :class:`QueryError` (a :class:`~kgrag.errors.KgragError` and ``ValueError``):
:class:`QuerySyntaxError` (with the character ``position``) for malformed text and
:class:`QueryStructureError` for well-formed text that is not a query (a bare entity, an
``AND`` with fewer than two operands). Unknown relations or entities are found later, when a query
is bound to a graph (:mod:`kgrag.methods.ultrag.vocabulary`), and raise
:class:`QueryResolutionError`. Inputs are bounded (length and nesting depth), so hostile text
cannot exhaust memory or the stack.

>>> q = parse_query("AND(Q1 -> P1_inv, Q2 -> P2_inv) -> P4")
>>> to_dsl(q)
'AND(Q1 -> P1_inv, Q2 -> P2_inv) -> P4'
>>> parse_query("(((Q1, (P1_inv,)), (Q2, (P2_inv,))), (P4,))") == q
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kgrag.errors import KgragError

#: Longest query text accepted (an LLM reply holding a runaway query is refused, not parsed).
MAX_QUERY_CHARS = 20_000
#: Deepest nesting accepted (keeps the recursive-descent parser far from Python's stack limit).
MAX_DEPTH = 64

INVERSE_SUFFIXES: tuple[str, ...] = ("_inv", "_inverse", "_reverse")
OPERATORS = ("AND", "OR", "NOT")


# ---------------------------------------------------------------------------------------- errors
class QueryError(KgragError, ValueError):
    """A logical query could not be parsed, is not a valid query, or does not fit the graph."""

    def __init__(self, message: str, *, text: str | None = None, position: int | None = None):
        self.text = text
        self.position = position
        if position is not None and text is not None:
            snippet = text[max(0, position - 20): position + 20].replace("\n", " ")
            message = f"{message} at position {position} (near {snippet!r})"
        super().__init__(message)


class QuerySyntaxError(QueryError):
    """The text is not well-formed (unbalanced brackets, a missing relation, stray tokens...)."""


class QueryStructureError(QueryError):
    """Well-formed, but not a query: a bare entity, or AND/OR with fewer than two operands."""


class QueryResolutionError(QueryError):
    """A relation or entity of the query is not in the graph (or its id is out of range)."""


# ------------------------------------------------------------------------------------------- AST
@dataclass(frozen=True)
class Entity:
    """A query leaf: an entity id (``Q12``), a name, or a quoted mention to be linked.

    ``quoted`` records whether the text was quoted; quoted leaves are never read as ids.
    """

    text: str
    quoted: bool = False


@dataclass(frozen=True)
class Relation:
    """A relation token; ``inverse`` means traverse tail -> head.

    ``suffix`` keeps the inverse suffix as written (``"_inv"``...), so a graph whose relation is
    literally named ``"x_inv"`` can still be matched; it does not take part in equality.
    """

    name: str
    inverse: bool = False
    suffix: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise QueryStructureError("empty relation name")
        if self.inverse and not self.suffix:
            object.__setattr__(self, "suffix", "_inv")


@dataclass(frozen=True)
class Projection:
    """``operand -> relation``: entities reached from ``operand`` by one ``relation`` edge."""

    operand: Query | Entity
    relation: Relation


@dataclass(frozen=True)
class Intersection:
    """``AND(q1, ..., qn)``, n >= 2 (product t-norm by default)."""

    operands: tuple[Query, ...]

    def __post_init__(self) -> None:
        _check_operands("AND", self.operands)


@dataclass(frozen=True)
class Union_:
    """``OR(q1, ..., qn)``, n >= 2 -- an extension beyond the paper's AND-only queries."""

    operands: tuple[Query, ...]

    def __post_init__(self) -> None:
        _check_operands("OR", self.operands)


@dataclass(frozen=True)
class Negation:
    """``NOT(q)`` -- an extension; the complement of a fuzzy set (``1 - x``)."""

    operand: Query

    def __post_init__(self) -> None:
        if isinstance(self.operand, Entity):
            raise QueryStructureError(_bare_entity_message(self.operand))


Query = Projection | Intersection | Union_ | Negation
QUERY_TYPES = (Projection, Intersection, Union_, Negation)


def _bare_entity_message(entity: Entity) -> str:
    return (f"bare entity {entity.text!r} is not a query: project it with '-> relation' "
            "(every leaf needs at least one projection)")


def _check_operands(op: str, operands: tuple[Any, ...]) -> None:
    if len(operands) < 2:
        raise QueryStructureError(f"{op} needs at least two operands, got {len(operands)}")
    for operand in operands:
        if isinstance(operand, Entity):
            raise QueryStructureError(_bare_entity_message(operand))
        if not isinstance(operand, QUERY_TYPES):
            raise QueryStructureError(f"{op} operand is not a query: {operand!r}")


# ------------------------------------------------------------------------------------ traversal
def leaves(query: Query) -> list[Entity]:
    """The entity leaves in left-to-right order (the order leaf fuzzy sets are given in)."""
    out: list[Entity] = []

    def walk(node: Any) -> None:
        if isinstance(node, Entity):
            out.append(node)
        elif isinstance(node, (Projection, Negation)):
            walk(node.operand)
        else:
            for operand in node.operands:
                walk(operand)

    walk(query)
    return out


def relations(query: Query) -> list[Relation]:
    """The relation tokens in left-to-right order."""
    out: list[Relation] = []

    def walk(node: Any) -> None:
        if isinstance(node, Projection):
            walk(node.operand)
            out.append(node.relation)
        elif isinstance(node, Negation):
            walk(node.operand)
        elif isinstance(node, (Intersection, Union_)):
            for operand in node.operands:
                walk(operand)

    walk(query)
    return out


def depth(query: Query | Entity) -> int:
    """Longest number of projections from a leaf to the root (the hops the query can reach)."""
    if isinstance(query, Entity):
        return 0
    if isinstance(query, Projection):
        return depth(query.operand) + 1
    if isinstance(query, Negation):
        return depth(query.operand)
    return max(depth(q) for q in query.operands)


def postfix(query: Query) -> list[tuple[str, Any]]:
    """The query as a postfix program, the form UltraQuery's executor runs on a stack.

    Instructions: ``("leaf", i)`` pushes leaf set ``i``; ``("project", Relation)`` replaces the
    top; ``("and", n)`` / ``("or", n)`` pop ``n`` sets and push their conjunction/disjunction;
    ``("not", 1)`` complements the top.
    """
    program: list[tuple[str, Any]] = []
    counter = iter(range(1 << 30))

    def emit(node: Any) -> None:
        if isinstance(node, Entity):
            program.append(("leaf", next(counter)))
        elif isinstance(node, Projection):
            emit(node.operand)
            program.append(("project", node.relation))
        elif isinstance(node, Negation):
            emit(node.operand)
            program.append(("not", 1))
        else:
            for operand in node.operands:
                emit(operand)
            program.append(("and" if isinstance(node, Intersection) else "or", len(node.operands)))

    emit(query)
    return program


# ------------------------------------------------------------------------------------ formatting
_BARE_ATOM = re.compile(r"^(?:(?!->)[^\s(),'\"→])(?:(?!->)[^\s(),→])*$")


def _atom(text: str, *, quote_always: bool = False) -> str:
    if not quote_always and _BARE_ATOM.match(text) and text.upper() not in OPERATORS:
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote(text: str) -> str:
    """``text`` as a quoted DSL string (a mention leaf or a relation name with any characters)."""
    return _atom(text, quote_always=True)


def _relation_text(rel: Relation) -> str:
    # A name ending in an inverse suffix must be quoted, or it would read back as an inverse.
    plain_ok = not rel.name.endswith(INVERSE_SUFFIXES)
    base = _atom(rel.name, quote_always=not plain_ok)
    return base + ("_inv" if rel.inverse else "")


def _entity_text(entity: Entity) -> str:
    return _atom(entity.text, quote_always=entity.quoted)


def to_dsl(query: Query | Entity) -> str:
    """Canonical DSL text; ``parse_query(to_dsl(q)) == q`` for every query."""
    if isinstance(query, Entity):
        return _entity_text(query)
    if isinstance(query, Projection):
        inner = to_dsl(query.operand)
        if isinstance(query.operand, Negation):
            inner = f"({inner})"
        return f"{inner} -> {_relation_text(query.relation)}"
    if isinstance(query, Negation):
        return f"NOT({to_dsl(query.operand)})"
    op = "AND" if isinstance(query, Intersection) else "OR"
    return f"{op}({', '.join(to_dsl(q) for q in query.operands)})"


def to_tuple_text(query: Query | Entity) -> str:
    """The BetaE nested-tuple form (projections and intersections only).

    Consecutive projections from an entity are folded into one chain ``(e, (r1, r2))``.
    """
    if isinstance(query, Entity):
        return _entity_text(query)
    if isinstance(query, Projection):
        chain = [query.relation]
        node: Any = query.operand
        while isinstance(node, Projection) and isinstance(node.operand, Entity):
            chain.insert(0, node.relation)
            node = node.operand
        rels = ", ".join(_relation_text(r) for r in chain)
        return f"({to_tuple_text(node)}, ({rels},))" if len(chain) == 1 else \
            f"({to_tuple_text(node)}, ({rels}))"
    if isinstance(query, Intersection):
        return "(" + ", ".join(to_tuple_text(q) for q in query.operands) + ")"
    raise QueryStructureError("the tuple form has no OR / NOT; use the DSL form")


# ------------------------------------------------------------------------------------- tokenizer
@dataclass(frozen=True)
class _Token:
    kind: str  # "arrow" "(" ")" "," "word" "string"
    text: str
    pos: int
    suffix: str = ""  # inverse suffix glued to a quoted string: "directed by"_inv


#: A word: no white space, brackets, commas or arrows; a quote may not start it but may follow.
_WORD = re.compile(r"(?:(?!->)[^\s(),'\"→])(?:(?!->)[^\s(),→])*")
_INFIX = ("AND", "OR")
_SPACE = re.compile(r"\s+")


def _read_string(text: str, pos: int) -> tuple[str, int]:
    quote = text[pos]
    out = []
    i = pos + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == quote:
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise QuerySyntaxError("unterminated quoted string", text=text, position=pos)


def tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        m = _SPACE.match(text, i)
        if m:
            i = m.end()
            continue
        ch = text[i]
        if text.startswith("->", i):
            tokens.append(_Token("arrow", "->", i))
            i += 2
        elif ch == "→":
            tokens.append(_Token("arrow", "->", i))
            i += 1
        elif ch in "(),":
            tokens.append(_Token(ch, ch, i))
            i += 1
        elif ch in "'\"":
            value, end = _read_string(text, i)
            suffix = ""
            for s in INVERSE_SUFFIXES:
                if text.startswith(s, end) and not _WORD.match(text, end + len(s)):
                    suffix, end = s, end + len(s)
                    break
            tokens.append(_Token("string", value, i, suffix))
            i = end
        else:
            m = _WORD.match(text, i)
            if not m:  # pragma: no cover - every other character starts a word
                raise QuerySyntaxError(f"unexpected character {ch!r}", text=text, position=i)
            tokens.append(_Token("word", m.group(), i))
            i = m.end()
    return tokens


def _check_brackets(text: str, tokens: list[_Token]) -> None:
    stack: list[int] = []
    for tok in tokens:
        if tok.kind == "(":
            stack.append(tok.pos)
        elif tok.kind == ")":
            if not stack:
                raise QuerySyntaxError("unbalanced brackets: ')' without '('", text=text,
                                       position=tok.pos)
            stack.pop()
        if len(stack) > MAX_DEPTH:
            raise QuerySyntaxError(f"nesting deeper than {MAX_DEPTH}", text=text, position=tok.pos)
    if stack:
        raise QuerySyntaxError("unbalanced brackets: '(' is never closed", text=text,
                               position=stack[-1])


def _split_relation(name: str, suffix: str = "", *, quoted: bool = False) -> Relation:
    """A relation from a token; a quoted name is taken literally (only a glued suffix inverts)."""
    if suffix:
        return Relation(name, True, suffix)
    if quoted:
        return Relation(name, False)
    for s in INVERSE_SUFFIXES:
        if name.endswith(s) and len(name) > len(s):
            return Relation(name[: -len(s)], True, s)
    return Relation(name, False)


# ------------------------------------------------------------------------------------ DSL parser
_ENTITY_ID = re.compile(r"^Q\d+$")
_RELATION_ID = re.compile(r"^P\d+$")


class _DSLParser:
    def __init__(self, text: str, tokens: list[_Token], strict_ids: bool) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.strict_ids = strict_ids

    def error(self, message: str, tok: _Token | None = None) -> QuerySyntaxError:
        pos = tok.pos if tok is not None else len(self.text)
        return QuerySyntaxError(message, text=self.text, position=pos)

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, kind: str, what: str) -> _Token:
        tok = self.peek()
        if tok is None or tok.kind != kind:
            found = "end of query" if tok is None else repr(tok.text)
            raise self.error(f"expected {what}, found {found}", tok)
        self.i += 1
        return tok

    def parse(self) -> Query:
        if not self.tokens:
            raise QuerySyntaxError("empty query")
        start = self.peek()
        node = self.disjunction()
        tok = self.peek()
        if tok is not None:
            raise self.error(f"unexpected {tok.text!r} after a complete query", tok)
        if isinstance(node, Entity):
            raise QueryStructureError(_bare_entity_message(node), text=self.text,
                                      position=start.pos if start else None)
        return node

    def query(self) -> Query:
        start = self.peek()
        node = self.disjunction()
        if isinstance(node, Entity):
            raise QueryStructureError(_bare_entity_message(node), text=self.text,
                                      position=start.pos if start else None)
        return node

    def _infix(self, word: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "word" and tok.text.upper() == word

    def disjunction(self) -> Query | Entity:
        return self._infix_level("OR", self.conjunction, Union_)

    def conjunction(self) -> Query | Entity:
        return self._infix_level("AND", self.chain, Intersection)

    def _infix_level(self, word: str, operand: Any, build: Any) -> Query | Entity:
        starts = [self.peek()]
        node = operand()
        if not self._infix(word):
            return node
        operands = [node]
        op = None
        while (tok := self.peek()) is not None and self._infix(word):
            op = tok
            self.i += 1
            starts.append(self.peek())
            operands.append(operand())
        for item, tok in zip(operands, starts):
            if isinstance(item, Entity):
                raise QueryStructureError(_bare_entity_message(item), text=self.text,
                                          position=tok.pos if tok else None)
        try:
            return build(tuple(operands))
        except QueryStructureError as exc:
            raise QueryStructureError(str(exc), text=self.text,
                                      position=op.pos if op else None) from None

    def chain(self) -> Query | Entity:
        node = self.primary()
        while (tok := self.peek()) is not None and tok.kind == "arrow":
            self.i += 1
            node = Projection(node, self.relation())
        return node

    def name(self, *, stop_at_infix: bool) -> tuple[str, int]:
        """A bare name from the words at the cursor: ``(text as written, number of tokens)``."""
        first = self.tokens[self.i]
        last, count = first, 0
        while (tok := self.peek()) is not None and tok.kind == "word":
            if count and stop_at_infix and tok.text.upper() in _INFIX:
                break
            if count and tok.text.upper() in OPERATORS and self._next_is("("):
                break
            last = tok
            self.i += 1
            count += 1
        group_end = self._word_group_end()
        if group_end is not None:
            last = self.tokens[group_end]
            count += group_end - self.i + 1
            self.i = group_end + 1
        end = last.pos + len(last.text)
        return self.text[first.pos:end], count

    def _next_is(self, kind: str) -> bool:
        return self.i + 1 < len(self.tokens) and self.tokens[self.i + 1].kind == kind

    def _word_group_end(self) -> int | None:
        """Index of the ``)`` of a ``( WORD+ )`` group at the cursor, else ``None``."""
        if self.i >= len(self.tokens) or self.tokens[self.i].kind != "(":
            return None
        j = self.i + 1
        while j < len(self.tokens) and self.tokens[j].kind == "word":
            j += 1
        if j > self.i + 1 and j < len(self.tokens) and self.tokens[j].kind == ")":
            return j
        return None

    def relation(self) -> Relation:
        tok = self.peek()
        if tok is None or tok.kind not in ("word", "string"):
            found = "end of query" if tok is None else repr(tok.text)
            raise self.error(f"expected a relation after '->', found {found}", tok)
        if tok.kind == "string":
            self.i += 1
            if not tok.text.strip():
                raise self.error("empty relation name", tok)
            return _split_relation(tok.text, tok.suffix, quoted=True)
        text, count = self.name(stop_at_infix=True)
        if count > 1:
            rel = _split_relation(text)
            if self.strict_ids:
                raise self.error(f"relation {text!r} is not P<digits> or P<digits>_inv", tok)
            return rel
        rel = _split_relation(tok.text)
        if self.strict_ids and not _RELATION_ID.match(rel.name):
            raise self.error(f"relation {tok.text!r} is not P<digits> or P<digits>_inv", tok)
        return rel

    def primary(self) -> Query | Entity:
        tok = self.peek()
        if tok is None:
            raise self.error("expected an entity, AND(...) or '(' but the query ended")
        nxt = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if tok.kind == "word" and tok.text.upper() in OPERATORS and nxt is not None \
                and nxt.kind == "(":
            return self.operator(tok)
        if tok.kind == "(":
            self.i += 1
            inner = self.disjunction()
            self.take(")", "')'")
            return inner
        if tok.kind == "word":
            if tok.text.upper() in OPERATORS:
                raise self.error(f"{tok.text} must be followed by '('", tok)
            text, count = self.name(stop_at_infix=False)
            if self.strict_ids and not _ENTITY_ID.match(text):
                raise self.error(f"entity {text!r} is not Q<digits> or a quoted mention", tok)
            # a name of several words is read like a quoted mention (never an id)
            return Entity(text, count > 1)
        if tok.kind == "string":
            self.i += 1
            if not tok.text.strip():
                raise self.error("empty entity mention", tok)
            if tok.suffix:
                raise self.error("an inverse suffix belongs on a relation, not an entity", tok)
            return Entity(tok.text, True)
        raise self.error(f"unexpected {tok.text!r}", tok)

    def operator(self, tok: _Token) -> Query:
        op = tok.text.upper()
        self.i += 2  # the word and '('
        if (t := self.peek()) is not None and t.kind == ")":
            raise QueryStructureError(f"empty {op}()", text=self.text, position=tok.pos)
        operands = [self.query()]
        while (t := self.peek()) is not None and t.kind == ",":
            self.i += 1
            if (t2 := self.peek()) is not None and t2.kind == ")":
                break  # tolerate a trailing comma
            operands.append(self.query())
        self.take(")", f"',' or ')' closing {op}(")
        try:
            if op == "NOT":
                if len(operands) != 1:
                    raise QueryStructureError(f"NOT takes one operand, got {len(operands)}")
                return Negation(operands[0])
            return Intersection(tuple(operands)) if op == "AND" else Union_(tuple(operands))
        except QueryStructureError as exc:
            raise QueryStructureError(str(exc), text=self.text, position=tok.pos) from None


# ---------------------------------------------------------------------------------- tuple parser
def _read_tuple_tree(text: str, tokens: list[_Token]) -> Any:
    """Nested tuples of atoms from tokens: ``(a, (b, c),)`` -> ``[_Token, [_Token, _Token]]``."""
    pos = 0

    def item() -> Any:
        nonlocal pos
        if pos >= len(tokens):
            raise QuerySyntaxError("the tuple ended early", text=text, position=len(text))
        tok = tokens[pos]
        if tok.kind == "(":
            pos += 1
            elems: list[Any] = []
            while True:
                if pos >= len(tokens):
                    raise QuerySyntaxError("unbalanced brackets", text=text, position=tok.pos)
                if tokens[pos].kind == ")":
                    pos += 1
                    break
                elems.append(item())
                if pos < len(tokens) and tokens[pos].kind == ",":
                    pos += 1
                elif pos < len(tokens) and tokens[pos].kind != ")":
                    raise QuerySyntaxError("expected ',' or ')' in a tuple", text=text,
                                           position=tokens[pos].pos)
            if not elems:
                raise QuerySyntaxError("empty tuple", text=text, position=tok.pos)
            return elems
        if tok.kind in ("word", "string"):
            pos += 1
            return tok
        raise QuerySyntaxError(f"unexpected {tok.text!r} in a tuple query", text=text,
                               position=tok.pos)

    tree = item()
    if pos != len(tokens):
        raise QuerySyntaxError(f"unexpected {tokens[pos].text!r} after the tuple", text=text,
                               position=tokens[pos].pos)
    return tree


def _is_atom(x: Any) -> bool:
    return isinstance(x, (_Token, str, int))


def _tuple_to_ast(node: Any, text: str | None) -> Query | Entity:
    if isinstance(node, _Token):
        if node.suffix:
            raise QuerySyntaxError("an inverse suffix belongs on a relation", text=text,
                                   position=node.pos)
        return Entity(node.text, node.kind == "string")
    if isinstance(node, bool):
        raise QueryStructureError(f"{node!r} is not an entity")
    if isinstance(node, int):
        return Entity(f"Q{node}" if node >= 0 else str(node), False)
    if isinstance(node, str):
        if not node.strip():
            raise QueryStructureError("empty entity in a tuple query")
        return Entity(node, not bool(_ENTITY_ID.match(node)))
    if not isinstance(node, (list, tuple)) or not node:
        raise QueryStructureError(f"not a tuple query: {node!r:.80}")
    if len(node) == 2 and isinstance(node[1], (list, tuple)) and node[1] \
            and all(_is_atom(r) for r in node[1]):
        result = _tuple_to_ast(node[0], text)
        for rel in node[1]:
            result = Projection(result, _tuple_relation(rel, text))
        return result
    if len(node) < 2:
        raise QueryStructureError("a one-element tuple is neither a projection nor an "
                                  "intersection")
    operands = [_tuple_to_ast(q, text) for q in node]
    return Intersection(tuple(operands))  # type: ignore[arg-type]


def _tuple_relation(rel: Any, text: str | None) -> Relation:
    if isinstance(rel, _Token):
        if not rel.text.strip():
            raise QuerySyntaxError("empty relation name", text=text, position=rel.pos)
        return _split_relation(rel.text, rel.suffix, quoted=rel.kind == "string")
    if isinstance(rel, bool):
        raise QueryStructureError(f"{rel!r} is not a relation")
    if isinstance(rel, int):
        return Relation(f"P{rel}") if rel >= 0 else Relation(f"P{-rel - 1}", True)
    if not str(rel).strip():
        raise QueryStructureError("empty relation name")
    return _split_relation(str(rel))


def _looks_like_tuple(tokens: list[_Token]) -> bool:
    return bool(tokens) and tokens[0].kind == "(" and not any(t.kind == "arrow" for t in tokens)


# ------------------------------------------------------------------------------------ entry point
def _checked(node: Query, text: str | None) -> Query:
    """Refuse trees taller than :data:`MAX_DEPTH` (measured without recursion)."""
    stack: list[tuple[Any, int]] = [(node, 1)]
    while stack:
        current, level = stack.pop()
        if level > MAX_DEPTH:
            raise QuerySyntaxError(f"query nested deeper than {MAX_DEPTH} operations", text=text)
        if isinstance(current, (Projection, Negation)):
            stack.append((current.operand, level + 1))
        elif isinstance(current, (Intersection, Union_)):
            stack.extend((q, level + 1) for q in current.operands)
    return node


def parse_query(query: str | tuple | list | Query, *, strict_ids: bool = False) -> Query:
    """Parse DSL text, tuple-form text, or a Python tuple into a query AST.

    ``strict_ids=True`` enforces the paper's literal grammar: entities ``Q<digits>`` (or quoted
    mentions) and relations ``P<digits>`` / ``P<digits>_inv`` only. A Python tuple (BetaE form)
    may hold ``int`` ids (BetaE's convention: entity ``i``; relation ``i``, negative ``-i-1`` for
    the inverse) or strings.

    Raises :class:`QueryError` (syntax or structure) and nothing else for any ``str`` input.
    """
    if isinstance(query, QUERY_TYPES):
        return query  # type: ignore[return-value]
    if isinstance(query, Entity):
        raise QueryStructureError(_bare_entity_message(query))
    if isinstance(query, (tuple, list)):
        if _depth_of(query) > MAX_DEPTH:
            raise QuerySyntaxError(f"nesting deeper than {MAX_DEPTH}")
        node = _tuple_to_ast(query, None)
        if isinstance(node, Entity):
            raise QueryStructureError(_bare_entity_message(node))
        return _checked(node, None)
    if not isinstance(query, str):
        raise QuerySyntaxError(f"a query must be text or a tuple, not {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise QuerySyntaxError(f"query longer than {MAX_QUERY_CHARS} characters")
    text = query
    tokens = tokenize(text)
    _check_brackets(text, tokens)
    if _looks_like_tuple(tokens):
        node = _tuple_to_ast(_read_tuple_tree(text, tokens), text)
        if isinstance(node, Entity):
            raise QueryStructureError(_bare_entity_message(node), text=text, position=0)
        _checked(node, text)
        if strict_ids:
            _check_strict(node, text)
        return node
    return _checked(_DSLParser(text, tokens, strict_ids).parse(), text)


def _check_strict(node: Query, text: str) -> None:
    for leaf in leaves(node):
        if not leaf.quoted and not _ENTITY_ID.match(leaf.text):
            raise QuerySyntaxError(f"entity {leaf.text!r} is not Q<digits> or a quoted mention",
                                   text=text)
    for rel in relations(node):
        if not _RELATION_ID.match(rel.name):
            raise QuerySyntaxError(f"relation {rel.name!r} is not P<digits> or P<digits>_inv",
                                   text=text)


def _depth_of(obj: Any, level: int = 0) -> int:
    if level > MAX_DEPTH:
        return level
    if isinstance(obj, (tuple, list)) and obj:
        return max(_depth_of(x, level + 1) for x in obj)
    return level


def iter_nodes(query: Query) -> Iterator[Query | Entity]:
    """Every node of the tree, parents before children."""
    yield query
    if isinstance(query, (Projection, Negation)):
        child = query.operand
        if isinstance(child, Entity):
            yield child
        else:
            yield from iter_nodes(child)
    elif isinstance(query, (Intersection, Union_)):
        for operand in query.operands:
            yield from iter_nodes(operand)
