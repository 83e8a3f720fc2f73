"""LoRA fine-tuning of a small local causal LM for one method's LLM step, on this CPU.

``kgrag finetune`` (:mod:`kgrag.commands.finetune`) builds training pairs for a method
(:mod:`.pairs`: GraphRAFT's L1 data synthesised from gold answers, the oracles' UltRAG queries
and SimGRAG patterns), trains a LoRA adapter with ``peft`` (:mod:`.train`: fp32, seeded,
resumable) and saves it with a manifest; :mod:`.model` loads a base model (a Hugging Face
folder or a GGUF file) or a saved adapter, and scores candidate strings exactly for
GraphRAFT's constrained selection.

Nothing here is imported by ``import kgrag``; torch, transformers and peft are imported lazily
by the functions that need them (``pip install 'kgrag[finetune]'``).
"""

#: The methods whose LLM step ``kgrag finetune`` trains (GraphRAFT's query selector, UltRAG's
#: query writer, SimGRAG's pattern writer).
METHODS = ("graphraft", "ultrag", "simgrag")
