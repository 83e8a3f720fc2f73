"""The LLM port: protocol, adapters (LangChain / LlamaIndex / callables), usage, parsing, and
the step drivers that run one algorithm sync or async (:mod:`kgrag.llm.steps`)."""

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
    extract_all_tags,
    extract_json_object,
    extract_tag,
    parse_literal,
    split_items,
    tag_lines,
)
from kgrag.llm.steps import (
    CallLog,
    LLMRequest,
    Steps,
    acomplete_and_parse,
    ask_and_parse,
    complete_and_parse,
    run_async,
    run_sync,
)

__all__ = [
    "LLM",
    "BaseLLMAdapter",
    "CallLog",
    "CallableLLM",
    "LLMRequest",
    "LangChainLLM",
    "LlamaIndexLLM",
    "Steps",
    "UsageTracker",
    "acomplete_and_parse",
    "as_llm",
    "ask_and_parse",
    "complete_and_parse",
    "extract_all_tags",
    "extract_json_object",
    "extract_tag",
    "optional_llm",
    "parse_literal",
    "run_async",
    "run_sync",
    "split_items",
    "tag_lines",
    "track_usage",
]
