"""docs/ultrag.md's executor table from the ``ultrag_neural.py incomplete`` JSONs.

One row per dataset and share of edges removed: exact / neural / default (hybrid) MRR, Hits@1,
Hits@10, the frequency prior's MRR, how often the default's top answer is an exact answer (when one
exists), how often the default ran the neural executor, the share of the neural gain over the exact
executor the default keeps (where that gain is at least a point), and each executor's median
``UltRAG.run`` time. Then the per-relation comparison with the prior and the calibration of the
neural scores.

Usage::

    python benchmarks/ultrag_hybrid_table.py benchmarks/results/ultrag_hybrid_incomplete_*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def fmt(cell: dict) -> str:
    return f"{cell['mrr']:.1f} / {cell['hits@1']:.1f} / {cell['hits@10']:.1f}"


def kept(row: dict, metric: str) -> str:
    """The share of the neural gain over exact that the default keeps (``-`` without one)."""
    exact, neural, default = (row["all"][k][metric] for k in ("symbolic", "neural", "hybrid"))
    if neural - exact < 1:  # no neural gain (or under a point): nothing to keep
        return "-"
    share = 100 * (default - exact) / (neural - exact)
    return "> 100 %" if share > 100.5 else f"{share:.0f} %"


def print_relations(relations: dict) -> None:
    """Per relation (rows) and dataset (columns): ``neural / prior MRR (questions)`` on the
    questions the exact executor cannot answer; **bold** = flagged (prior >= neural)."""
    datasets = list(dict.fromkeys(key.split(": ")[0] for key in relations))
    for family in ("PQ", "MetaQA"):
        names = [d for d in datasets if d.startswith(family)]
        if not names:
            continue
        rels = sorted({key.split(": ")[1] for key in relations if key.startswith(family)})
        print("| last relation | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for rel in rels:
            cells = []
            for name in names:
                row = relations.get(f"{name}: {rel}")
                if row is None:
                    cells.append("")
                    continue
                cell = f"{row['neural_mrr']:.1f} / {row['prior_mrr']:.1f} ({row['questions']})"
                cells.append(f"**{cell}**" if row["flagged"] else cell)
            print(f"| {rel} | " + " | ".join(cells) + " |")
        print()


def main(paths: list[str]) -> int:
    reports = [json.loads(Path(p).read_text()) for p in paths]
    print("| dataset | removed | questions | exact MRR / H@1 / H@10 | neural MRR / H@1 / H@10 "
          "| default MRR / H@1 / H@10 | prior MRR | default top-1 exact | neural ran "
          "| neural gain kept (MRR / H@10) | median ms exact / neural / default |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    relations: dict = {}
    for report in reports:
        relations.update(report.get("per_relation_unreachable", {}))
        for name, data in report["datasets"].items():
            for drop, row in data["drops"].items():
                agree = row["top1_agrees_with_exact"]["hybrid"]
                neural_agree = row["top1_agrees_with_exact"]["neural"]
                ms = row["median_ms"]
                print(f"| {name} | {drop} | {row['questions']} | {fmt(row['all']['symbolic'])} "
                      f"| {fmt(row['all']['neural'])} | {fmt(row['all']['hybrid'])} "
                      f"| {row['all']['prior']['mrr']:.1f} "
                      f"| {agree['agree_pct']:.0f} % (neural {neural_agree['agree_pct']:.0f} %) "
                      f"| {row['hybrid_neural_ran_pct']:.0f} % "
                      f"| {kept(row, 'mrr')} / {kept(row, 'hits@10')} "
                      f"| {ms['symbolic']:.2f} / {ms['neural']:.0f} / {ms['hybrid']:.2f} |")
    print()
    print_relations(relations)
    print()
    for report in reports:
        for kind, cal in report.get("calibration", {}).items():
            if cal:
                bins = "; ".join(f"{b['bin']}: n={b['n']} conf {b['mean_confidence']:.3f} "
                                 f"right {b['accuracy']:.2f}" for b in cal["bins"])
                print(f"- {', '.join(report['datasets'])} {kind}: ECE {cal['ece']:.3f} "
                      f"({cal['pairs']} pairs) -- {bins}")
    for report in reports:
        machine = report["machine"] if isinstance(report.get("machine"), dict) else report
        print(f"- {', '.join(report['datasets'])}: {machine.get('cpu_model')} "
              f"{machine.get('simd') or machine.get('simd_flags')}, load average "
              f"{report.get('load_average')} -> {report.get('load_average_end')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
