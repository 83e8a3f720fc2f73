"""Render ``benchmarks/results/graph_*.json`` as the markdown tables of ``docs/benchmarks.md``.

    python benchmarks/make_table.py benchmarks/results/graph_metaqa.json \\
        benchmarks/results/graph_1M.json benchmarks/results/graph_10M.json
"""

from __future__ import annotations

import json
import sys

OPS = [
    ("one_hop_out", "one-hop, outgoing (1 source)"),
    ("one_hop_both", "one-hop, both directions (1 source)"),
    ("follow_path_2rel", "2-relation path follow (1 source)"),
    ("follow_path_3rel", "3-relation path follow (1 source)"),
    ("shortest_path_pair_undirected", "shortest path, 1 pair, undirected, ≤3 hops"),
    ("shortest_path_pair_directed", "shortest path, 1 pair, directed, ≤3 hops"),
    ("two_hop_100_both", "2-hop expansion from 100 sources, both directions"),
    ("two_hop_100_out", "2-hop expansion from 100 sources, outgoing"),
    ("shortest_paths_100x100_undirected", "shortest paths 100 sources → 100 targets, undirected"),
    ("score_all_edges_topk", "score every edge + top-100"),
]
BUILDS = [
    ("ours-file", "kgrag `read_triples` (triples file)"),
    ("ref-file", "reference `LocalKGStore.read_from_csv` (same file)"),
    ("ours-arrays", "kgrag `KnowledgeGraph.from_arrays` (int arrays)"),
    ("ours-load", "kgrag `load_graph` (saved graph)"),
]


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "–"
    return (f"{v:.4f}" if v < 0.1 else f"{v:.3f}" if v < 10 else f"{v:.1f}" if v < 1000
            else f"{v:,.0f}")


def table(result: dict) -> str:
    g = result["graph"]
    lines = [f"### {g['source']} — {g['nodes']:,} nodes, {g['edges']:,} edges, "
             f"{g['relations']} relations", "",
             f"`{result['command']}` ({result['date']}, load average "
             f"{result['load_average_at_start'][0]:.1f} → {result['load_average_at_end'][0]:.1f})",
             "",
             "| build | seconds (median) | peak RSS MB | RSS after MB |", "|---|---:|---:|---:|"]
    b = result["build"]
    for key, label in BUILDS:
        if key in b:
            m = b[key]
            lines.append(f"| {label} | {m['seconds_median']:.2f} | {m['peak_rss_mb']:.0f} | "
                         f"{m['final_rss_mb']:.0f} |")
    if "ratios_file_build_vs_reference" in b:
        r = b["ratios_file_build_vs_reference"]
        lines.append(f"| **ratio reference / kgrag (file)** | **{r['time']:.1f}x** | "
                     f"**{r['peak_rss']:.1f}x** | **{r['final_rss']:.1f}x** |")
    lines.append("")
    ops = result.get("operations", {})
    if ops:
        has_ref = any("reference" in v for v in ops.values())
        head = "| operation | kgrag names ms | kgrag ids ms |"
        sep = "|---|---:|---:|"
        if has_ref:
            head += " reference ms | speed-up (names) | speed-up (ids) |"
            sep += "---:|---:|---:|"
        lines += [head, sep]
        for key, label in OPS:
            if key not in ops:
                continue
            o = ops[key]
            names, ids, ref = (o.get(k, {}).get("median_ms")
                               for k in ("ours", "ours_ids", "reference"))
            row = f"| {label} | {fmt_ms(names)} | {fmt_ms(ids)} |"
            if has_ref:
                s_names = f"{ref / names:.2f}x" if ref and names else "–"
                s_ids = f"{ref / ids:.2f}x" if ref and ids else "–"
                row += f" {fmt_ms(ref)} | {s_names} | {s_ids} |"
            lines.append(row)
        lines.append("")
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            print(table(json.load(fh)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
