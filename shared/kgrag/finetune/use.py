"""Using a fine-tuned adapter in its method, with the prompt it was trained on.

An adapter folder written by ``kgrag finetune`` (:data:`~kgrag.finetune.model.MANIFEST` names
its method) is used like this:

* **UltRAG / SimGRAG** -- the adapter is the method's LLM (``local_chat_model(DIR)`` or
  ``--llm local:DIR``) and the method sends its query / pattern step the compact prompt of
  training (:func:`kgrag.finetune.pairs.method_prompts`: the one-line system message and the
  question), not the long few-shot prompt an untuned model needs;
* **GraphRAFT** -- the adapter scores the enumerated candidate queries
  (:func:`finetuned_selector`: GraphRAFT's constrained decoding with a full beam).

:func:`finetuned_params` is what ``kgrag ask`` / ``kgrag eval`` add to the method's parameters
when ``--llm local:DIR`` names such a folder; an adapter trained for another method, or with a
prompt version this kgrag no longer writes, is a :class:`~kgrag.errors.ConfigurationError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kgrag.errors import ConfigurationError
from kgrag.finetune.model import MANIFEST
from kgrag.finetune.pairs import PROMPT_VERSIONS, method_prompts


def adapter_folder(llm_spec: str | None) -> Path | None:
    """The kgrag fine-tuned adapter folder ``--llm local:DIR[?options]`` names, else ``None``."""
    if not llm_spec or not llm_spec.startswith("local:"):
        return None
    folder = Path(llm_spec[len("local:"):].split("?", 1)[0]).expanduser()
    return folder if (folder / MANIFEST).is_file() else None


def checked_manifest(folder: str | Path, method: str) -> dict[str, Any]:
    """The adapter's manifest, checked: trained for ``method``'s step, at this kgrag's prompt
    version for it."""
    from kgrag.finetune.model import read_manifest

    manifest = read_manifest(folder)
    trained = manifest.get("method")
    if trained != method:
        raise ConfigurationError(f"{folder} was fine-tuned for {trained}'s LLM step, not "
                                 f"{method}'s: use it with --method {trained}")
    version, current = manifest.get("prompt_version"), PROMPT_VERSIONS[method]
    if version != current:
        raise ConfigurationError(f"{folder} was trained on {method}'s compact prompt version "
                                 f"{version}; this kgrag writes version {current}: train it "
                                 "again with kgrag finetune")
    return manifest


def finetuned_selector(folder: str | Path, *, per_token: bool = False) -> Any:
    """GraphRAFT's query selector from an adapter fine-tuned for it: every candidate's compact
    text scored by the adapter after the training prompt (``per_token``: mean log-probability
    per token instead of the total)."""
    from kgrag.finetune.model import CandidateScorer, ScoredChoiceSelector
    from kgrag.llm.local import load_transformers

    manifest = checked_manifest(folder, "graphraft")
    # the base with the adapter, loaded once per process: --llm local:DIR's chat model (built
    # by kgrag.llm.local from the same folder) shares these objects instead of loading again
    model, tokenizer = load_transformers(str(folder))
    return ScoredChoiceSelector(CandidateScorer(model, tokenizer, manifest["prompt_template"]),
                                per_token=per_token, source=str(folder))


def finetuned_params(llm_spec: str | None, method: str) -> dict[str, Any]:
    """The constructor parameters that make ``method`` use the adapter ``--llm`` names as it
    was trained (``{}`` when ``llm_spec`` is not a kgrag fine-tuned adapter folder)."""
    folder = adapter_folder(llm_spec)
    if folder is None:
        return {}
    checked_manifest(folder, method)
    if method == "graphraft":
        return {"selector": finetuned_selector(folder)}
    return {"prompts": method_prompts(method)}
