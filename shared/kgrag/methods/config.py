"""The base of the methods' knob dataclasses (UltRAGConfig, ByoKGConfig, KETRAGConfig,
SimGRAGConfig): one place for what they all do with their fields.

A method's config is a frozen dataclass subclassing :class:`MethodConfig`; it checks its values
in ``__post_init__`` (``ValueError``) and names the method in :attr:`MethodConfig.label`. The
method takes it as ``config=`` and lets keyword knobs override it: ``Method(graph, top_k=20)``
and ``Method(graph, config=MethodConfig(top_k=20))`` are the same method (see
:meth:`MethodConfig.replace`, which rejects unknown names with a ``TypeError``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

C = TypeVar("C", bound="MethodConfig")


@dataclass(frozen=True)
class MethodConfig:
    """Field names, a checked :meth:`replace`, and a plain-dict round trip for a method config."""

    #: the method's name in error messages ("UltRAG", "KET-RAG", ...)
    label: ClassVar[str] = "method"

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self: C, **params: Any) -> C:
        """A copy with ``params`` changed (checked again); ``TypeError`` naming any unknown
        parameter."""
        unknown = set(params) - set(self.field_names())
        if unknown:
            raise TypeError(f"unknown {self.label} parameter(s): {', '.join(sorted(unknown))} "
                            f"(see {type(self).__name__}: {', '.join(self.field_names())})")
        return dataclasses.replace(self, **params) if params else self

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[C], data: dict[str, Any]) -> C:
        """The config from :meth:`as_dict` output; keys it does not know (written by another
        version) are ignored."""
        known = set(cls.field_names())
        return cls(**{k: v for k, v in data.items() if k in known})
