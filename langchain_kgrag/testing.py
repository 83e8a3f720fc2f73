"""A scripted LangChain chat model for tests, examples and offline demos.

:class:`ScriptedChatModel` is LangChain's own ``GenericFakeChatModel`` (streaming, callbacks
and tracing work as with any chat model) replaying ``AIMessage`` s, with or without tool calls;
``bind_tools`` returns the model itself, since the script already says which tools to call.

>>> chat = scripted_chat("Paris")
>>> chat.invoke("Capital of France?").content
'Paris'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

__all__ = ["ScriptedChatModel", "scripted_chat"]


class ScriptedChatModel(GenericFakeChatModel):
    """A LangChain chat model replaying scripted ``AIMessage`` s (see the module docstring)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self


def scripted_chat(*messages: str | AIMessage) -> ScriptedChatModel:
    """A :class:`ScriptedChatModel` replying with ``messages`` in order."""
    return ScriptedChatModel(messages=iter(
        [m if isinstance(m, AIMessage) else AIMessage(content=m) for m in messages]))
