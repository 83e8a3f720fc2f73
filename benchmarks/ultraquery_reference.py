"""Golden outputs for kgrag's UltraQuery: run the public reference on a small graph.

Runs UltraQuery from a checkout of DeepGraphLearning/ULTRA at commit 427966a (its own code and
its ``ckpts/ultraquery.pth``; nothing of it is copied into kgrag) on a graph loaded with kgrag,
for BetaE-shaped queries (1p 2p 3p 2i 3i pi ip 2in inp pin 2u) sampled by walks so that each has
answers, plus fuzzy-leaf projections, and saves the all-entity scores as a test fixture
(``tests/data/ultraquery/``; see its README for the exact commands). Not part of kgrag and not
run by the tests: it needs the scratch checkout, ``torch_geometric`` importable and a C++
compiler (ULTRA JIT-builds its ``rspmm`` kernel); ``torch_scatter`` is replaced by a few lines of
plain torch when it is not installed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import torch
from machine_info import stamp

from kgrag.graph import read_triples

SHAPES_NOTE = "BetaE nested tuples; relation r < R is forward, r >= R is the inverse of r - R"


def install_torch_scatter_shim():
    """Register a minimal ``torch_scatter`` (scatter / scatter_add with plain torch ops).

    torch-scatter does not build here; ULTRA imports it at module level but its inference path
    only needs ``scatter_add`` (relation graph degrees). The unused names raise if ever called.
    """
    import types

    def scatter(src, index, dim=-1, out=None, dim_size=None, reduce="sum"):
        dim = dim % src.dim()
        if dim_size is None:
            dim_size = int(index.max()) + 1 if index.numel() else 0
        size = list(src.shape)
        size[dim] = dim_size
        if index.dim() == 1:
            shape = [1] * src.dim()
            shape[dim] = -1
            index = index.view(shape)
        index = index.expand_as(src)
        if reduce in ("sum", "add"):
            return torch.zeros(size, dtype=src.dtype).scatter_add_(dim, index, src)
        return torch.zeros(size, dtype=src.dtype).scatter_reduce_(
            dim, index, src, {"mean": "mean", "max": "amax", "min": "amin"}[reduce],
            include_self=False)

    def unused(*args, **kwargs):
        raise NotImplementedError("not needed for UltraQuery inference")

    module = types.ModuleType("torch_scatter")
    module.scatter = scatter
    module.scatter_add = lambda src, index, dim=-1, out=None, dim_size=None: scatter(
        src, index, dim, dim_size=dim_size)
    module.scatter_mean = lambda src, index, dim=-1, out=None, dim_size=None: scatter(
        src, index, dim, dim_size=dim_size, reduce="mean")
    module.scatter_max = unused
    composite = types.ModuleType("torch_scatter.composite")
    composite.scatter_log_softmax = unused
    composite.scatter_softmax = unused
    module.composite = composite
    sys.modules["torch_scatter"] = module
    sys.modules["torch_scatter.composite"] = composite


def nested_to_dsl(nested, R):
    """BetaE nested tuple (ints) -> kgrag DSL with Q<entity id> / P<relation id>[_inv]."""
    def rel(r):
        return f"P{r}" if r < R else f"P{r - R}_inv"

    def walk(n):
        if len(n) == 2 and isinstance(n[-1][-1], int):
            var, ops = n
            text = f"Q{var}" if isinstance(var, int) else walk(var)
            for op in ops:
                if op == -2:
                    text = f"NOT({text})"
                else:
                    text = f"{text} -> {rel(op)}"
            return text
        if len(n[-1]) == 1 and n[-1][0] == -1:
            return "OR(" + ", ".join(walk(v) for v in n[:-1]) + ")"
        return "AND(" + ", ".join(walk(v) for v in n) + ")"
    return walk(nested)


def metaqa_sample(kb_path, out_tsv, seed=7):
    """The MetaQA fixture graph: every edge leaving the films of 6 actors drawn (seeded) from
    the 200 most frequent ``starred_actors`` tails (153 films, 1,617 edges, 1,083 nodes)."""
    import csv

    kg = read_triples(kb_path, sep="|", header=False)
    rng = np.random.default_rng(seed)
    star = kg.rels == kg.relation_id("starred_actors")
    star_h, star_t = kg.heads[star], kg.tails[star]
    counts = np.bincount(star_t, minlength=kg.num_nodes)
    actors = rng.choice(np.argsort(-counts)[:200], size=6, replace=False)
    films = np.unique(star_h[np.isin(star_t, actors)])
    keep = np.isin(kg.heads, films)
    with open(out_tsv, "w", newline="") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["head", "relation", "tail"])
        for h, r, t in zip(kg.heads[keep], kg.rels[keep], kg.tails[keep]):
            writer.writerow([kg.node_names[h], kg.relation_names[r], kg.node_names[t]])


def load_kg(path):
    return read_triples(path)


def random_queries(kg, rng, count_per_shape):
    """Sample BetaE-shaped queries whose symbolic answer set is non-empty (walks on the graph)."""
    R = kg.num_relations
    h = kg.heads.astype(np.int64)
    r = kg.rels.astype(np.int64)
    t = kg.tails.astype(np.int64)
    # edges with inverses, in the reference's numbering
    src = np.concatenate([h, t])
    typ = np.concatenate([r, r + R])
    dst = np.concatenate([t, h])

    def in_edges(node):
        """(relation, source) pairs of edges arriving at node."""
        m = dst == node
        return list(zip(typ[m].tolist(), src[m].tolist()))

    def path_to(node, hops):
        """A chain (anchor, (r1..rn)) that reaches node; walks backwards along in-edges."""
        rels = []
        cur = node
        for _ in range(hops):
            options = in_edges(cur)
            if not options:
                return None
            rr, ss = options[rng.integers(len(options))]
            rels.append(rr)
            cur = ss
        return (int(cur), tuple(int(x) for x in reversed(rels)))

    def branches(node, k, hops=1):
        out = []
        tries = 0
        while len(out) < k and tries < 50:
            tries += 1
            b = path_to(node, hops)
            if b is not None and b not in out:
                out.append(b)
        return out if len(out) == k else None

    targets = rng.permutation(kg.num_nodes)
    shapes = {}
    def as_tuple(found):
        return tuple(found) if found else None

    def pi_shape(v):
        a, b = path_to(v, 2), path_to(v, 1)
        return (a, b) if a and b else None

    gen = {
        "1p": lambda v: path_to(v, 1),
        "2p": lambda v: path_to(v, 2),
        "3p": lambda v: path_to(v, 3),
        "2i": lambda v: as_tuple(branches(v, 2)),
        "3i": lambda v: as_tuple(branches(v, 3)),
        "pi": pi_shape,
    }
    for name, fn in gen.items():
        shapes[name] = []
        for v in targets:
            q = fn(int(v))
            if q is not None and q not in shapes[name]:
                shapes[name].append(q)
            if len(shapes[name]) >= count_per_shape:
                break
    # ip: intersection then projection: pick a node w with >=2 in-branches, then an out-edge of w
    shapes["ip"] = []
    for v in targets:
        b = branches(int(v), 2)
        out = np.nonzero(src == v)[0]
        if b and len(out):
            e = out[rng.integers(len(out))]
            shapes["ip"].append((tuple(b), (int(typ[e]),)))
        if len(shapes["ip"]) >= count_per_shape:
            break
    # negation: 2in = AND(a -> r1, NOT(b -> r2)); inp = AND(a->r1, NOT(b->r2)) -> r3;
    # pin = AND(a->r1->r2, NOT(b->r3)); 2u = OR(a->r1, b->r2) (BetaE union)
    shapes["2in"], shapes["inp"], shapes["pin"], shapes["2u"] = [], [], [], []
    for v in targets:
        b = branches(int(v), 2)
        if b:
            a, c = b
            shapes["2in"].append((a, (c[0], (c[1][0], -2))))
            shapes["2u"].append((a, c, (-1,)))
            out = np.nonzero(src == v)[0]
            if len(out):
                e = out[rng.integers(len(out))]
                shapes["inp"].append(((a, (c[0], (c[1][0], -2))), (int(typ[e]),)))
        p2 = path_to(int(v), 2)
        p1 = path_to(int(v), 1)
        if p2 and p1 and p1[0] != p2[0]:
            shapes["pin"].append((p2, (p1[0], (p1[1][0], -2))))
        if min(len(shapes[k]) for k in ("2in", "inp", "pin", "2u")) >= count_per_shape:
            break
    for k in ("2in", "inp", "pin", "2u"):
        shapes[k] = shapes[k][:count_per_shape]
    return shapes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ultra", required=True, help="ULTRA checkout at 427966a")
    ap.add_argument("--graph", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-shape", type=int, default=3)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--metaqa-kb", help="write the MetaQA sample drawn from this KB to --graph "
                    "first (kb_reconstructed.txt)")
    args = ap.parse_args()
    if args.metaqa_kb:
        metaqa_sample(args.metaqa_kb, args.graph)

    if "torch_scatter" not in sys.modules:
        try:
            import torch_scatter  # noqa: F401
        except ImportError:
            install_torch_scatter_shim()
    sys.path.insert(0, args.ultra)
    from torch_geometric.data import Data
    from ultra import datasets_query  # noqa: F401  (import order breaks a cycle in the package)
    from ultra.models import Ultra
    from ultra.query_utils import Query
    from ultra.tasks import build_relation_graph
    from ultra.ultraquery import UltraQuery

    torch.set_num_threads(1)
    ckpt = os.path.join(args.ultra, "ckpts", "ultraquery.pth")
    with open(ckpt, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    state = torch.load(ckpt, map_location="cpu", weights_only=True)["model"]

    layer = {"input_dim": 64, "hidden_dims": [64] * 6, "message_func": "distmult",
             "aggregate_func": "sum", "short_cut": True, "layer_norm": True}
    model = UltraQuery(Ultra({**layer, "class": "RelNBFNet"}, {**layer, "class": "QueryNBFNet"}),
                       logic="product", dropout_ratio=0.25, threshold=0.0)
    model.load_state_dict(state)
    model.eval()

    kg = load_kg(args.graph)
    R, N = kg.num_relations, kg.num_nodes
    h = torch.as_tensor(kg.heads.astype(np.int64))
    r = torch.as_tensor(kg.rels.astype(np.int64))
    t = torch.as_tensor(kg.tails.astype(np.int64))
    graph = Data(edge_index=torch.stack([torch.cat([h, t]), torch.cat([t, h])]),
                 edge_type=torch.cat([r, r + R]), num_nodes=N, num_relations=2 * R)
    graph = build_relation_graph(graph)

    rng = np.random.default_rng(args.seed)
    shapes = random_queries(kg, rng, args.per_shape)
    records, scores = [], []
    with torch.no_grad():
        for shape, qs in shapes.items():
            for nested in qs:
                q = Query.from_nested(nested).unsqueeze(0)
                q = Query(q)
                model.execute(graph, q, symbolic_traversal=False)
                prob = model.stack.pop()[0]
                records.append({"shape": shape, "nested": json.loads(json.dumps(nested)),
                                "dsl": nested_to_dsl(nested, R)})
                scores.append(prob.numpy().astype(np.float32))
        # fuzzy leaves (the UltRAG entity-linking case): call the relation projection directly
        for k in range(3):
            ids = rng.choice(N, size=3 + k, replace=False)
            w = rng.uniform(0.1, 1.0, size=len(ids)).astype(np.float32)
            x = np.zeros(N, np.float32)
            x[ids] = w
            rels = [int(rng.integers(2 * R)) for _ in range(1 + k % 2)]
            prob = torch.as_tensor(x)[None]
            for rr in rels:
                prob = model.model(graph, prob, torch.tensor([rr]))
            records.append({"shape": f"fuzzy-{len(rels)}p", "leaf_ids": ids.tolist(),
                            "leaf_memberships": w.tolist(), "relations": rels,
                            "dsl": None})
            scores.append(prob[0].numpy().astype(np.float32))

    np.savez_compressed(
        args.out,
        scores=np.stack(scores),
        heads=kg.heads, rels=kg.rels, tails=kg.tails,
        entity_names=np.array(kg.node_names, dtype=str),
        relation_names=np.array(kg.relation_names, dtype=str),
    )
    meta = {"reference": "DeepGraphLearning/ULTRA@427966ad8ed60420eef034063d44f3153addff90",
            "checkpoint_sha256": sha, "torch": torch.__version__, "num_nodes": N,
            "num_relations": R, "nested_convention": SHAPES_NOTE, "queries": records}
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(stamp(meta), f, indent=1)
    print(len(records), "queries;", N, "nodes")


if __name__ == "__main__":
    main()
