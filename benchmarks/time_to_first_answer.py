"""Time to first answer: ``kgrag ask`` on MetaQA's KB (43k names, 134k triples) per method, cold
and warm, plus the repeated ``kgrag simgrag --pattern`` run.

Not a test: runs the installed ``kgrag`` command in fresh processes (what a user waits for:
interpreter start, graph load, model load, name embedding or cache read, one retrieval) and
writes ``benchmarks/results/time_to_first_answer.json``. Run from the repo root, alone on the
machine if possible::

    flock /work/bench.lock python benchmarks/time_to_first_answer.py

Per method, three runs with their own empty cache folder (``--cache-dir``):

- **cold**: nothing cached (the ONNX export of the model is made, every name embedded);
- **warm**: the same command again (name vectors and model export read from the cache);
- **no vector cache**: ``--no-cache`` with the export already there (names embedded again).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_info import stamp

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT.parent / "shared" / "data" / "metaqa" / "kb_reconstructed.txt"
QUESTION = "Which films did Satoshi Kon direct?"
PATTERN = '[("UNKNOWN film 1", "directed_by", "Satoshi Kon")]'
COMMANDS = {
    "simgrag": ["ask", str(KB), QUESTION, "--method", "simgrag", "--pattern", PATTERN],
    "byokg": ["ask", str(KB), QUESTION, "--method", "byokg"],
    "graphraft": ["ask", str(KB), QUESTION, "--method", "graphraft"],
    "ultrag": ["ask", str(KB), QUESTION, "--method", "ultrag", "--query",
               '"Satoshi Kon" -> directed_by_inv'],
    "simgrag command": ["simgrag", str(KB), "--pattern", PATTERN],
}


def kgrag_command() -> list[str]:
    exe = Path(sys.executable).with_name("kgrag")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "kgrag.cli"]


def run(argv: list[str], cache: Path, *extra: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    started = time.perf_counter()
    proc = subprocess.run(kgrag_command() + argv + ["--cache-dir", str(cache), *extra],
                          env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    lines = proc.stdout.strip().splitlines()
    return {"seconds": round(seconds, 2), "first_lines": lines[:4],
            "notes": [ln for ln in proc.stderr.splitlines() if ln.startswith("kgrag:")],
            "loadavg": os.getloadavg()}


def main() -> int:
    if not KB.is_file():
        print(f"MetaQA KB not found at {KB}", file=sys.stderr)
        return 1
    rows = []
    base = Path(tempfile.mkdtemp(prefix="kgrag-ttfa-"))
    try:
        for method, argv in COMMANDS.items():
            cache = base / method.replace(" ", "-")
            row = {"method": method, "command": "kgrag " + " ".join(
                a if " " not in a and "(" not in a else repr(a) for a in argv)}
            row["cold"] = run(argv, cache)
            row["warm"] = run(argv, cache)
            row["no_vector_cache"] = run(argv, cache, "--no-cache")
            rows.append(row)
            print(json.dumps({k: (v["seconds"] if isinstance(v, dict) else v)
                              for k, v in row.items()}), flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    out = ROOT / "benchmarks" / "results" / "time_to_first_answer.json"
    out.write_text(json.dumps(stamp({"rows": rows, "cpus": os.cpu_count(),
                               "machine": "2 cores shared with other engineers' jobs",
                               "command": "python benchmarks/time_to_first_answer.py"}), indent=2))
    print("| method | cold s | warm s | --no-cache s | load avg (warm run) |")
    print("|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['method']} | {r['cold']['seconds']} | {r['warm']['seconds']} | "
              f"{r['no_vector_cache']['seconds']} | "
              f"{' / '.join(f'{x:.1f}' for x in r['warm']['loadavg'])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
