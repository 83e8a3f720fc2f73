"""The base of the methods' knob dataclasses (ByoKGConfig, SimGRAGConfig, UltRAGConfig,
GraphRAFTConfig, KETRAGConfig): one place for what they all do with their fields.

A method's config is a frozen dataclass subclassing :class:`MethodConfig`; it checks its values
in ``__post_init__`` (``ValueError``; a subclass calls ``super().__post_init__()``) and names the
method in :attr:`MethodConfig.label`. A method class declares its config as
``KGMethod.config_class``, takes it as ``config=`` and lets keyword knobs override it:
``Method(graph, top_k=20)`` and ``Method(graph, config=MethodConfig(top_k=20))`` are the same
method (see :meth:`MethodConfig.replace`, which rejects unknown names with a ``TypeError``).
The method reads its knobs from ``method.config`` only (no knob is mirrored as an attribute).

One name per concept across the methods: ``top_k`` is a method's main result count (SimGRAG's
subgraphs, UltRAG's entities, GraphRAFT's nodes); a method with several counts names each
``<thing>_top_k`` (``link_top_k``: candidates per linked mention, ``entity_top_k`` ...).
``on_unusable_reply`` -- the policy for an LLM reply a method cannot use -- is a field of every
config (:data:`UNUSABLE_REPLY_POLICIES`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

C = TypeVar("C", bound="MethodConfig")

#: the values of ``on_unusable_reply``: raise :class:`~kgrag.errors.LLMOutputError`, return an
#: empty result (warning logged, reason in ``metadata["error"]``), or fall back to the method's
#: LLM-free retrieval (methods that have one; reason in ``metadata["fallback"]``)
UNUSABLE_REPLY_POLICIES = ("raise", "empty", "fallback")
#: the default: an unusable reply is an error the caller sees
DEFAULT_UNUSABLE_REPLY = "raise"


def check_unusable_reply(value: Any) -> str:
    """``value`` if it is one of :data:`UNUSABLE_REPLY_POLICIES`, else ``ValueError``."""
    if not isinstance(value, str) or value not in UNUSABLE_REPLY_POLICIES:
        raise ValueError(f"on_unusable_reply must be one of {UNUSABLE_REPLY_POLICIES}, "
                         f"got {value!r}")
    return value


@dataclass(frozen=True)
class MethodConfig:
    """Field names, a checked :meth:`replace`, and a plain-dict round trip for a method config.

    ``on_unusable_reply`` ["raise"]: what an LLM reply the method cannot use does after the
    step's bounded re-ask -- ``"raise"`` :class:`~kgrag.errors.LLMOutputError`, ``"empty"`` an
    empty result, ``"fallback"`` the method's LLM-free retrieval (methods that have one);
    docs/examples.md, "Unusable LLM replies".
    """

    #: the method's name in error messages ("UltRAG", "KET-RAG", ...)
    label: ClassVar[str] = "method"

    on_unusable_reply: str = DEFAULT_UNUSABLE_REPLY

    def __post_init__(self) -> None:
        check_unusable_reply(self.on_unusable_reply)

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
