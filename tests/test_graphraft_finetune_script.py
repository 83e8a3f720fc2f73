"""The optional fine-tuning script: importable and usable for data checks without peft/trl."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "graphraft_finetune.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("graphraft_finetune", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # must not need peft / trl / datasets
    return module


def _write(path, records):
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")


def test_paper_defaults_per_role(script, tmp_path):
    l1 = script.parse_args(["selector", "s.jsonl", "out", "--model", "m"])
    assert (l1.lora_r, l1.lora_alpha, l1.lora_dropout, l1.learning_rate, l1.epochs) == \
           (64, 64, 0.05, 2e-5, 1.0)
    assert l1.target_modules is None and l1.completion_only is False
    l2 = script.parse_args(["answer", "a.jsonl", "out", "--model", "m", "--lora-r", "8"])
    assert l2.lora_r == 8 and l2.grad_accum == 4 and l2.completion_only is True
    assert "down_proj" in l2.target_modules and l2.max_length == 15000


def test_records_are_validated_and_split(script, tmp_path):
    good = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    path = tmp_path / "selector.jsonl"
    _write(path, [good] * 20)
    records = script.load_chat_records(path)
    train, held_out = script.split_records(records, 0.1, seed=0)
    assert len(train) == 18 and len(held_out) == 2
    assert script.split_records(records[:5], 0.1, seed=0) == (records[:5], [])
    _write(path, [good, {"messages": [{"role": "user", "content": "q"}]}])
    with pytest.raises(ValueError, match=r"selector.jsonl:2"):
        script.load_chat_records(path)


def test_missing_training_packages_give_a_clear_message(script, tmp_path, capsys):
    missing = [p for p in script.TRAINING_PACKAGES if importlib.util.find_spec(p) is None]
    if not missing:
        pytest.skip("peft, trl, datasets and accelerate are all installed here")
    with pytest.raises(ImportError, match="pip install"):
        script.require_training_stack()
    path = tmp_path / "s.jsonl"
    _write(path, [{"messages": [{"role": "user", "content": "q"},
                                {"role": "assistant", "content": "a"}]}])
    assert script.main(["selector", str(path), str(tmp_path / "out"), "--model", "m"]) == 2
    assert "graphraft-finetune" in capsys.readouterr().err
