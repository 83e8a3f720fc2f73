"""Replaceable prompts: every method's prompts are named plain templates a user can override.

Each method declares its prompts as :class:`Prompt` s -- a ``str.format`` template (literal
braces doubled), the variables the method fills in, and what the prompt is for -- and takes one
parameter, ``prompts={"answer": "...", ...}``, to replace any of them::

    ByoKGRAG(kg, llm=chat, prompts={"answer": "Q: {question}\\nFacts:\\n{graph_context}\\nA:"})
    method.prompts.template("answer")      # the template in use
    method.prompts.describe()              # every name: variables and purpose

A replacement may be a string, a LangChain ``PromptTemplate`` (f-string format), a LangChain
``ChatPromptTemplate`` of a system and a human message (which sets ``<name>_system`` too, where
the method has one), or a LlamaIndex ``PromptTemplate`` -- recognised by duck typing, so the core
imports neither framework. A template may leave out optional variables (few-shot examples,
the schema, ...) but must keep the essential ones (:data:`ESSENTIAL_VARIABLES`: the question and
the retrieved data); an unknown name or variable, or a missing essential one, raises
``ValueError`` at once, not at the first question.
"""

from __future__ import annotations

import string
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: the variables that carry what a prompt is about -- the question and the retrieved data (or
#: the text, the tasks) -- which a replacement template must keep: one without them sends the
#: LLM a prompt that cannot be answered, silently. Variables outside this set (few-shot
#: ``examples``, ``schema``, ``m``, ...) may be dropped.
ESSENTIAL_VARIABLES = frozenset({"question", "candidates", "context", "graph_context",
                                 "evidence", "info", "text", "descriptions", "tasks", "previous"})


@dataclass(frozen=True)
class Prompt:
    """A default prompt: its ``str.format`` template, the variables filled in, its purpose,
    and ``required``: the variables a replacement must use (``None``: those of ``variables``
    in :data:`ESSENTIAL_VARIABLES`)."""

    template: str
    variables: tuple[str, ...] = ()
    description: str = ""
    required: tuple[str, ...] | None = None

    def required_variables(self) -> tuple[str, ...]:
        """The variables a replacement of this prompt must keep."""
        if self.required is not None:
            return self.required
        return tuple(v for v in self.variables if v in ESSENTIAL_VARIABLES)


def template_variables(template: str) -> set[str]:
    """The field names a ``str.format`` template uses (``{a}`` -> ``a``; ``{{`` is literal)."""
    names = set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field is not None:
            if not field or not field.isidentifier():
                raise ValueError(f"template field {{{field}}} is not a plain name; double "
                                 "literal braces as {{ and }}")
            names.add(field)
    return names


def _message_text(message: Any) -> tuple[str, str] | None:
    """``(role, template)`` of a LangChain chat message template, by duck typing."""
    inner = getattr(message, "prompt", None)
    text = getattr(inner, "template", None)
    if not isinstance(text, str):
        return None
    kind = type(message).__name__.lower()
    role = "system" if "system" in kind else "human" if "human" in kind else kind
    return role, text


def coerce_templates(name: str, value: Any) -> dict[str, str]:
    """``{prompt name: template}`` from one override value (string or framework template)."""
    if isinstance(value, str):
        return {name: value}
    fmt = getattr(value, "template_format", "f-string")
    if fmt not in ("f-string", None):
        raise ValueError(f"prompt {name!r}: only f-string templates are supported, not {fmt!r}")
    text = getattr(value, "template", None)
    if isinstance(text, str):  # LangChain PromptTemplate, LlamaIndex PromptTemplate
        return {name: text}
    messages = getattr(value, "messages", None)
    if messages is None:  # LlamaIndex ChatPromptTemplate keeps message_templates
        messages = getattr(value, "message_templates", None)
    if isinstance(messages, (list, tuple)) and messages:
        out: dict[str, str] = {}
        for message in messages:
            found = _message_text(message)
            if found is None and isinstance(getattr(message, "content", None), str):
                role = str(getattr(getattr(message, "role", ""), "value", "user"))
                found = ("system" if role == "system" else "human", message.content)
            if found is None:
                raise ValueError(f"prompt {name!r}: cannot read a template from {message!r}")
            role, text = found
            if role == "system":
                out[f"{name}_system"] = text
            elif role == "human" and name not in out:
                out[name] = text
            else:
                raise ValueError(f"prompt {name!r}: a chat template may hold one system and "
                                 "one human message")
        return out
    raise TypeError(f"prompt {name!r}: expected a string or a LangChain / LlamaIndex prompt "
                    f"template, got {type(value).__name__}")


class PromptSet:
    """The prompts of one method instance: the defaults plus the user's replacements.

    Thread-safe: :meth:`update` swaps the whole table at once, so a call running concurrently
    sees either the old or the new templates.
    """

    def __init__(self, defaults: Mapping[str, Prompt], overrides: Mapping[str, Any] | None = None,
                 *, method: str = "method") -> None:
        self.method = method
        self.defaults = dict(defaults)
        self._lock = threading.Lock()
        self._templates = {n: p.template for n, p in self.defaults.items()}
        if overrides:
            self.update(overrides)

    def _check(self, name: str, template: str) -> None:
        if name not in self.defaults:
            raise ValueError(f"{self.method} has no prompt {name!r}; its prompts are: "
                             f"{', '.join(sorted(self.defaults))}")
        allowed = set(self.defaults[name].variables)
        unknown = template_variables(template) - allowed
        if unknown:
            listed = ", ".join("{" + v + "}" for v in self.defaults[name].variables) or "none"
            raise ValueError(f"{self.method} prompt {name!r} cannot use "
                             f"{', '.join('{' + v + '}' for v in sorted(unknown))}; its "
                             f"variables are: {listed} (double literal braces: {{{{ }}}})")
        missing = [v for v in self.defaults[name].required_variables()
                   if v not in template_variables(template)]
        if missing:
            raise ValueError(f"{self.method} prompt {name!r} must use "
                             f"{', '.join('{' + v + '}' for v in missing)}: the method fills "
                             "them with the question and what it retrieved, and a prompt "
                             "without them cannot be answered")

    def update(self, overrides: Mapping[str, Any]) -> None:
        """Replace some templates (values: strings or framework prompt templates)."""
        new: dict[str, str] = {}
        for name, value in overrides.items():
            for key, template in coerce_templates(name, value).items():
                self._check(key, template)
                new[key] = template
        with self._lock:
            self._templates = {**self._templates, **new}

    def template(self, name: str) -> str:
        """The template in use for ``name``."""
        return self._templates[name]

    def format(self, name: str, /, **values: Any) -> str:
        """Fill the template ``name``; values it does not use are ignored."""
        template = self._templates[name]
        used = template_variables(template)
        return template.format(**{k: v for k, v in values.items() if k in used})

    def templates(self) -> dict[str, str]:
        """Every prompt's template in use, by name."""
        return dict(self._templates)

    def describe(self) -> dict[str, dict[str, Any]]:
        """Every prompt: its variables, purpose, and whether it was replaced."""
        return {n: {"variables": list(p.variables), "description": p.description,
                    "replaced": self._templates[n] != p.template}
                for n, p in self.defaults.items()}

    def __repr__(self) -> str:
        changed = [n for n, d in self.describe().items() if d["replaced"]]
        return f"PromptSet({self.method}: {len(self.defaults)} prompts, replaced={changed})"
