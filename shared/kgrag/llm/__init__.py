"""The LLM port: protocol, adapters (LangChain / LlamaIndex / callables), usage, parsing."""

from kgrag.llm.base import (
    LLM,
    BaseLLMAdapter,
    CallableLLM,
    LangChainLLM,
    LlamaIndexLLM,
    UsageTracker,
    as_llm,
    optional_llm,
    track_usage,
)
from kgrag.llm.parsing import (
    acomplete_and_parse,
    complete_and_parse,
    extract_all_tags,
    extract_json_object,
    extract_tag,
    parse_literal,
    split_items,
    tag_lines,
)

__all__ = [
    "LLM",
    "BaseLLMAdapter",
    "CallableLLM",
    "LangChainLLM",
    "LlamaIndexLLM",
    "UsageTracker",
    "acomplete_and_parse",
    "as_llm",
    "complete_and_parse",
    "extract_all_tags",
    "extract_json_object",
    "extract_tag",
    "optional_llm",
    "parse_literal",
    "split_items",
    "tag_lines",
    "track_usage",
]
