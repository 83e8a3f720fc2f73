"""Traversal of the in-memory graph on integer ids: the ``*_ids`` operations.

:class:`ArrayTraversal` is mixed into :class:`~kgrag.graph.memory.KnowledgeGraph`; it reads the
CSR arrays that storage builds (``heads``, ``rels``, ``tails``, ``out_indptr``, ``in_order``,
``in_indptr``, ``out_key``, ``in_key``, ``_r``) and never changes them. Frontiers are numpy
arrays; the tiny cases (one source, a few edges) run in plain Python because numpy's per-call
overhead dominates there. The name-level :class:`~kgrag.graph.base.GraphStore` operations in
:mod:`kgrag.graph.memory` are thin wrappers over these.
"""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from kgrag.compiled import compiled_module
from kgrag.graph.arrays import (
    _INT64_LIMIT,
    INDEX_DTYPE,
    _isin_sorted,
    _range_positions,
    _unique,
    expand_ranges,
)
from kgrag.graph.base import Direction, check_direction

#: held while a lazily built table (:meth:`ArrayTraversal.in_edge_heads`) is made
_TABLE_LOCK = threading.Lock()


def compiled_kernels() -> Any:
    """:mod:`kgrag.graph._kernels` (numba), or None without numba: the numpy code runs."""
    return compiled_module("kgrag.graph._kernels")


class ArrayTraversal:
    """Id-level traversal over the CSR index of an in-memory graph (a mixin; see module doc)."""

    heads: np.ndarray
    rels: np.ndarray
    tails: np.ndarray
    out_indptr: np.ndarray
    out_key: np.ndarray
    in_indptr: np.ndarray
    in_order: np.ndarray
    in_key: np.ndarray
    _r: int
    _scratch: threading.local
    _adj_tables: tuple[np.ndarray, np.ndarray] | None
    _degree_table: np.ndarray | None
    _in_heads: np.ndarray | None
    _mapped_files: Any

    if TYPE_CHECKING:  # provided by the storage class this is mixed into
        @property
        def num_nodes(self) -> int: ...

        @property
        def num_edges(self) -> int: ...

        def _relation_ids(self, relations: Iterable[str | int] | None) -> np.ndarray | None: ...

    def degree_ids(self, nodes: np.ndarray, direction: Direction = "both") -> np.ndarray:
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        nodes = np.asarray(nodes, dtype=np.int64)
        check_direction(direction)
        deg = np.zeros(len(nodes), dtype=np.int64)
        if direction in ("out", "both"):
            deg += self.out_indptr[nodes + 1] - self.out_indptr[nodes]
        if direction in ("in", "both"):
            deg += self.in_indptr[nodes + 1] - self.in_indptr[nodes]
        return deg

    def total_degrees(self) -> np.ndarray:
        """Every node's out-degree plus in-degree (a self-loop counts twice, as in
        :meth:`degree_ids`), built on first use: 4 bytes per node (int32 while the largest
        fits). Summing a node set's degrees is then one gather instead of four (a 16k-node
        set at 10M edges: 0.2 ms instead of 2 ms)."""
        table = self._degree_table
        if table is None:
            table = np.diff(self.out_indptr) + np.diff(self.in_indptr)
            if len(table) and int(table.max()) < 2**31:
                table = table.astype(np.int32)
            self._degree_table = table
        return table

    def in_edge_heads(self) -> np.ndarray:
        """The heads of the edges in in-edge order (``heads[in_order]``), built on first use:
        4 bytes per edge (int32). A node's in-edges then have their other ends side by side,
        where reading them through ``in_order`` was one random read each (at 10M edges, a
        16k-node domain's edges: most of the time :meth:`incident_ids` took)."""
        table = self._in_heads
        if table is None:
            with _TABLE_LOCK:  # threads reading domains side by side build it once
                table = self._in_heads
                if table is None:
                    table = self._in_heads = self.heads[self.in_order]
        return table

    def _pair_ranges(self, nodes: np.ndarray, rel: int,
                     reverse: bool) -> tuple[np.ndarray, np.ndarray]:
        """Start and count of the (node, rel) block in out_key (or in_key when ``reverse``)."""
        key = self.in_key if reverse else self.out_key
        probe = nodes.astype(np.int64) * self._r + rel
        lo = np.searchsorted(key, probe, side="left")
        hi = np.searchsorted(key, probe, side="right")
        return lo, hi - lo

    def _edges_one_direction(self, nodes: np.ndarray, reverse: bool,
                             rel_ids: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(edge ids, owner index into ``nodes``) of edges leaving (or entering) ``nodes``."""
        if rel_ids is None:
            indptr = self.in_indptr if reverse else self.out_indptr
            starts, counts = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
            pos, owner = expand_ranges(starts, counts)
        else:
            parts_pos, parts_owner = [], []
            for rel in rel_ids.tolist():
                starts, counts = self._pair_ranges(nodes, rel, reverse)
                p, o = expand_ranges(starts, counts)
                parts_pos.append(p)
                parts_owner.append(o)
            pos = np.concatenate(parts_pos) if parts_pos else np.empty(0, np.int64)
            owner = np.concatenate(parts_owner) if parts_owner else np.empty(0, np.int64)
        edges = self.in_order[pos].astype(np.int64) if reverse else pos
        return edges, owner

    def incident_ids(self, nodes: np.ndarray, *, self_loops_once: bool = True
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every edge at ``nodes`` in either direction, per entry of ``nodes`` (repeats allowed):
        ``(owner index into nodes, edge id, other end, forward)``, out-edges first.

        A self-loop is both an out-edge and an in-edge of its node; ``self_loops_once`` keeps
        only its out-edge copy (set it False to walk it both ways).
        """
        return self.incident_ids_and_relations(nodes, self_loops_once=self_loops_once)[:4]

    def incident_ids_and_relations(self, nodes: np.ndarray, *, self_loops_once: bool = True
                                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                              np.ndarray]:
        """:meth:`incident_ids` and each edge's relation id (``rels[edge id]``), read in the
        same pass: ``(owner, edge id, other end, forward, relation id)``."""
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        nodes = np.asarray(nodes, dtype=np.int64)
        compiled = compiled_kernels()
        if compiled is not None:
            if len(nodes) and (nodes.min() < 0 or nodes.max() >= len(self.out_indptr) - 1):
                raise IndexError(f"node ids must be in 0..{len(self.out_indptr) - 2}")
            return compiled.incident(nodes, self.out_indptr, self.tails, self.rels,
                                     self.in_indptr, self.in_order, self.in_edge_heads(),
                                     self.in_key, self._r, self_loops_once)
        e_out, own_out = self._edges_one_direction(nodes, False, None)
        e_in, own_in = self._edges_one_direction(nodes, True, None)
        # an in-edge's tail is its owner node, so one gather of the heads (random reads over
        # the edge arrays: the cost of this call on a big domain) tells self-loops and gives
        # the other ends
        heads_in = self.heads[e_in]
        if self_loops_once:
            keep = heads_in != nodes[own_in]
            e_in, own_in, heads_in = e_in[keep], own_in[keep], heads_in[keep]
        other = np.concatenate([self.tails[e_out], heads_in]).astype(np.int64)
        forward = np.concatenate([np.ones(len(e_out), bool), np.zeros(len(e_in), bool)])
        edges = np.concatenate([e_out, e_in])
        return (np.concatenate([own_out, own_in]), edges, other, forward, self.rels[edges])

    def edges_ids(self, nodes: np.ndarray, direction: Direction = "both",
                  relations: Iterable[str | int] | None = None) -> np.ndarray:
        """Sorted unique ids of the edges touching ``nodes`` in ``direction``."""
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        check_direction(direction)
        nodes = _unique(np.asarray(nodes, dtype=np.int64))
        rel_ids = self._relation_ids(relations)
        if len(nodes) == 1 and rel_ids is None:  # one node: its edges are CSR slices
            v = int(nodes[0])
            single = []
            if direction in ("out", "both"):
                single.append(np.arange(self.out_indptr[v], self.out_indptr[v + 1], dtype=np.int64))
            if direction in ("in", "both"):
                single.append(
                    self.in_order[self.in_indptr[v]:self.in_indptr[v + 1]].astype(np.int64))
            return single[0] if direction == "out" else _unique(np.concatenate(single))
        parts = []
        if direction in ("out", "both"):
            parts.append(self._edges_one_direction(nodes, False, rel_ids)[0])
        if direction in ("in", "both"):
            parts.append(self._edges_one_direction(nodes, True, rel_ids)[0])
        return _unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)

    def neighbors_ids(self, nodes: np.ndarray, direction: Direction = "both") -> np.ndarray:
        """Sorted unique neighbours of ``nodes`` (themselves only via self-loops/cycles)."""
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        nodes = np.asarray(nodes, dtype=np.int64)
        out = []
        if direction in ("out", "both"):
            e, _ = self._edges_one_direction(nodes, False, None)
            out.append(self.tails[e])
        if direction in ("in", "both"):
            e, _ = self._edges_one_direction(nodes, True, None)
            out.append(self.heads[e])
        return _unique(np.concatenate(out)).astype(np.int64) if out else np.empty(0, np.int64)

    def follow_path_ids(
        self,
        sources: np.ndarray,
        steps: Sequence[tuple[int, Direction]],
        *,
        fan_out: int | None = None,
        max_paths: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walk relation ``steps`` from every source; return only complete walks.

        Returns ``(nodes, edges, forward)`` with shapes ``(P, L+1)``, ``(P, L)``, ``(P, L)``.
        ``fan_out`` caps the edges followed from one walk at one step (lowest edge ids first,
        so the result is deterministic); ``max_paths`` caps the number of walks kept after each
        step (earliest first). A ``"both"`` step follows outgoing edges, then incoming ones.
        """
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        sources = np.asarray(sources, dtype=np.int64).ravel()
        if len(sources) == 1 and 0 <= int(sources[0]) < self.num_nodes:
            walks = self._walks_one_source(int(sources[0]), steps, fan_out, max_paths)
            if walks is not None:
                n_walks, length = len(walks), len(steps)
                return (np.array([w[0] for w in walks],
                                 dtype=np.int64).reshape(n_walks, length + 1),
                        np.array([w[1] for w in walks], dtype=np.int64).reshape(n_walks, length),
                        np.array([w[2] for w in walks], dtype=bool).reshape(n_walks, length))
        frontier = _unique(sources)
        # Per step: the frontier it started from, and for each surviving walk its owner (index
        # into that frontier), edge and direction. Walks are assembled once at the end by
        # following owners backwards, instead of re-stacking every column at every step.
        history: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for rel, direction in steps:
            check_direction(direction)
            cand = []
            for reverse in ((False,) if direction == "out" else (True,) if direction == "in"
                            else (False, True)):
                starts, counts = self._pair_ranges(frontier, int(rel), reverse)
                if fan_out is not None:
                    counts = np.minimum(counts, fan_out)
                pos, owner = expand_ranges(starts, counts)
                e = self.in_order[pos].astype(np.int64) if reverse else pos
                nxt = (self.heads if reverse else self.tails)[e].astype(np.int64)
                cand.append((e, owner, nxt, np.full(len(e), not reverse)))
            if len(cand) == 1:
                e, owner, nxt, fwd = cand[0]
            else:
                e, owner, nxt, fwd = (np.concatenate(parts) for parts in zip(*cand))
            if direction == "both":
                # keep each walk's candidates together, and honour fan_out across both directions
                order = np.argsort(owner, kind="stable")
                e, owner, nxt, fwd = e[order], owner[order], nxt[order], fwd[order]
                if fan_out is not None and len(owner):
                    first = np.r_[0, np.flatnonzero(np.diff(owner)) + 1]
                    rank = np.arange(len(owner)) - np.repeat(first,
                                                             np.diff(np.r_[first, len(owner)]))
                    keep = rank < fan_out
                    e, owner, nxt, fwd = e[keep], owner[keep], nxt[keep], fwd[keep]
            if max_paths is not None and len(owner) > max_paths:
                e, owner, nxt, fwd = (e[:max_paths], owner[:max_paths], nxt[:max_paths],
                                      fwd[:max_paths])
            history.append((frontier, owner, e, fwd))
            frontier = nxt
        n_walks, length = len(frontier), len(history)
        nodes = np.empty((n_walks, length + 1), dtype=np.int64)
        edges = np.empty((n_walks, length), dtype=np.int64)
        forward = np.empty((n_walks, length), dtype=bool)
        nodes[:, length] = frontier
        walk = np.arange(n_walks)
        for k in range(length - 1, -1, -1):
            step_frontier, owner, e, fwd = history[k]
            edges[:, k] = e[walk]
            forward[:, k] = fwd[walk]
            walk = owner[walk]
            nodes[:, k] = step_frontier[walk]
        return nodes, edges, forward

    def _csr_views(self) -> tuple[memoryview, ...]:
        """Memoryviews of the CSR arrays a one-source walk reads: ``(out_indptr, out_key,
        tails, in_indptr, in_key, in_order, heads)``. Indexing a memoryview gives a Python int
        in ~40 ns, and :func:`bisect.bisect_left` runs on it in C: a *(node, rel)* block is
        found in ``O(log degree)`` without any numpy call (each costs ~1 µs, which is what a
        one-source walk of a few edges used to spend its time on)."""
        views = getattr(self, "_csr_memoryviews", None)
        if views is None or views[0] is not self.out_key or views[1] is not self.in_key:
            arrays = (self.out_indptr, self.out_key, self.tails, self.in_indptr, self.in_key,
                      self.in_order, self.heads)  # the index is rebuilt as a whole
            views = self._csr_memoryviews = (
                self.out_key, self.in_key, tuple(np.ascontiguousarray(a).data for a in arrays))
        return views[2]

    def _steps_from(self, node: int, rel: int, direction: Direction,
                    views: tuple[memoryview, ...] | None = None) -> list[tuple[int, int, bool]]:
        """``(edge id, next node, forward)`` of every ``rel`` edge at ``node`` in ``direction``,
        in index order (a ``"both"`` step: outgoing edges first, then incoming ones, as
        :meth:`follow_path_ids`): two binary searches per direction in the node's slice of the
        sorted ``node * R + rel`` keys, in plain Python over memoryviews (``views``:
        :meth:`_csr_views`, passed by a caller that makes many steps)."""
        out_ptr, out_key, tails, in_ptr, in_key, in_order, heads = views or self._csr_views()
        probe = node * self._r + rel
        found: list[tuple[int, int, bool]] = []
        if direction != "in":
            lo = bisect_left(out_key, probe, out_ptr[node], out_ptr[node + 1])
            hi = bisect_right(out_key, probe, lo, out_ptr[node + 1])
            if hi > lo:
                found += zip(range(lo, hi), tails[lo:hi].tolist(), [True] * (hi - lo))
        if direction != "out":
            lo = bisect_left(in_key, probe, in_ptr[node], in_ptr[node + 1])
            hi = bisect_right(in_key, probe, lo, in_ptr[node + 1])
            if hi > lo:
                edges = in_order[lo:hi].tolist()
                found += zip(edges, [heads[e] for e in edges], [False] * (hi - lo))
        return found

    def _walks_one_source(self, source: int, steps: Sequence[tuple[int, Direction]],
                          fan_out: int | None, max_paths: int | None, limit: int = 32
                          ) -> list[tuple[list[int], list[int], list[bool]]] | None:
        """:meth:`follow_path_ids` for one source in plain Python (numpy's per-call overhead
        dominates such small walks): the same walks in the same order, each as lists
        ``(nodes, edges, forward)``; ``None`` once more than ``limit`` walks are alive, so the
        caller redoes it with arrays."""
        for _, direction in steps:
            check_direction(direction)
        steps_from, views = self._steps_from, self._csr_views()
        walks: list[tuple[list[int], list[int], list[bool]]] = [([source], [], [])]
        for rel, direction in steps:
            rel = int(rel)
            grown: list[tuple[list[int], list[int], list[bool]]] = []
            for nodes, edges, fwds in walks:
                cand = steps_from(nodes[-1], rel, direction, views)
                if fan_out is not None:
                    if direction == "both":  # the cap applies per direction, then overall
                        cand = ([c for c in cand if c[2]][:fan_out]
                                + [c for c in cand if not c[2]][:fan_out])
                    cand = cand[:fan_out]
                grown += [(nodes + [nxt], edges + [e], fwds + [f]) for e, nxt, f in cand]
            if max_paths is not None:
                grown = grown[:max_paths]
            if len(grown) > limit:
                return None
            walks = grown
        return walks

    def _scratch_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-thread BFS arrays of length N, reset after use (so a search costs O(visited))."""
        s = self._scratch
        if getattr(s, "n", None) != self.num_nodes:
            s.n = self.num_nodes
            s.dist = np.full(self.num_nodes, -1, dtype=np.int32)
            s.parent_edge = np.full(self.num_nodes, -1, dtype=np.int64)
            s.parent_fwd = np.zeros(self.num_nodes, dtype=bool)
        return s.dist, s.parent_edge, s.parent_fwd

    def _scratch_masks(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-thread node and edge visit masks (all False between calls)."""
        s = self._scratch
        if getattr(s, "mask_sizes", None) != (self.num_nodes, self.num_edges):
            s.mask_sizes = (self.num_nodes, self.num_edges)
            s.node_mask = np.zeros(self.num_nodes, dtype=bool)
            s.edge_mask = np.zeros(self.num_edges, dtype=bool)
        return s.node_mask, s.edge_mask

    def _incident_edges(self, nodes: np.ndarray, *, reverse: bool) -> np.ndarray:
        """Ids of the edges leaving (entering, when ``reverse``) ``nodes``, node by node."""
        indptr = self.in_indptr if reverse else self.out_indptr
        starts = indptr[nodes]
        pos = _range_positions(starts, indptr[nodes + 1] - starts)
        return self.in_order[pos].astype(np.int64) if reverse else pos

    def _bfs_step(self, frontier: np.ndarray,
                  directed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All (edge, next node, forward flag) leaving ``frontier`` (both ways if undirected)."""
        e_out = self._incident_edges(frontier, reverse=False)
        parts_e, parts_n, parts_f = [e_out], [self.tails[e_out].astype(np.int64)], [
            np.ones(len(e_out), bool)]
        if not directed:
            e_in = self._incident_edges(frontier, reverse=True)
            parts_e.append(e_in)
            parts_n.append(self.heads[e_in].astype(np.int64))
            parts_f.append(np.zeros(len(e_in), bool))
        return np.concatenate(parts_e), np.concatenate(parts_n), np.concatenate(parts_f)

    def shortest_paths_ids(
        self,
        sources: np.ndarray,
        targets: np.ndarray,
        *,
        max_hops: int = 3,
        directed: bool = False,
        max_paths: int | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """One shortest path (≤ ``max_hops`` edges) to each reachable target from the nearest
        source.

        A multi-source breadth-first search; ties between equally short paths are broken by the
        lowest edge id, so results are deterministic. Targets that are themselves sources are
        skipped (a zero-length path says nothing). Returns ``(nodes, edges, forward)`` per path,
        ordered by length then target id.
        """
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        sources = _unique(np.asarray(sources, dtype=np.int64))
        target_set = _unique(np.asarray(targets, dtype=np.int64))
        target_set = target_set[~_isin_sorted(target_set, sources)]
        if len(sources) == 0 or len(target_set) == 0 or max_hops < 1:
            return []
        dist, parent_edge, parent_fwd = self._scratch_arrays()
        touched = [sources]
        try:
            dist[sources] = 0
            frontier = sources
            for hop in range(1, max_hops + 1):
                e, nxt, fwd = self._bfs_step(frontier, directed)
                fresh = dist[nxt] < 0
                e, nxt, fwd = e[fresh], nxt[fresh], fwd[fresh]
                if len(nxt) == 0:
                    break
                order = np.lexsort((e, nxt))  # by node, then lowest edge id
                e, nxt, fwd = e[order], nxt[order], fwd[order]
                first = np.r_[True, nxt[1:] != nxt[:-1]]
                e, nxt, fwd = e[first], nxt[first], fwd[first]
                dist[nxt] = hop
                parent_edge[nxt] = e
                parent_fwd[nxt] = fwd
                touched.append(nxt)
                frontier = nxt
                if np.all(dist[target_set] >= 0):
                    break
            reached = target_set[dist[target_set] > 0]
            reached = reached[np.lexsort((reached, dist[reached]))]
            if max_paths is not None:
                reached = reached[:max_paths]
            paths = []
            for t in reached.tolist():
                length = int(dist[t])
                nodes = np.empty(length + 1, np.int64)
                edges = np.empty(length, np.int64)
                fwds = np.empty(length, bool)
                cur = t
                for i in range(length - 1, -1, -1):
                    nodes[i + 1] = cur
                    edge = int(parent_edge[cur])
                    edges[i] = edge
                    fwds[i] = bool(parent_fwd[cur])
                    cur = int(self.heads[edge]) if fwds[i] else int(self.tails[edge])
                nodes[0] = cur
                paths.append((nodes, edges, fwds))
            return paths
        finally:
            for arr in touched:
                dist[arr] = -1
                parent_edge[arr] = -1
                parent_fwd[arr] = False

    def k_hop_subgraph_ids(
        self,
        nodes: np.ndarray,
        *,
        hops: int = 2,
        direction: Direction = "both",
        max_edges: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(node ids, edge ids) reached by a BFS of ``hops`` levels from ``nodes``.

        The edges are those traversed from nodes at distance < ``hops``; with ``max_edges`` the
        BFS stops adding edges once the cap is reached (nearer levels first, then lowest ids).
        """
        if self._mapped_files is not None:  # a mapped file rewritten in place
            self._mapped_files.check()
        check_direction(direction)
        start = _unique(np.asarray(nodes, dtype=np.int64))
        node_seen, edge_seen = self._scratch_masks()
        node_levels = [start]
        edge_parts: list[np.ndarray] = []
        n_edges = 0
        try:
            node_seen[start] = True
            frontier = start
            for _ in range(hops):
                if len(frontier) == 0:
                    break
                parts = []
                if direction in ("out", "both"):
                    parts.append(self._incident_edges(frontier, reverse=False))
                if direction in ("in", "both"):
                    parts.append(self._incident_edges(frontier, reverse=True))
                e = np.concatenate(parts)
                e = _unique(e[~edge_seen[e]])
                if max_edges is not None and n_edges + len(e) > max_edges:
                    e = e[: max_edges - n_edges]
                edge_seen[e] = True
                edge_parts.append(e)
                n_edges += len(e)
                ends = np.concatenate([self.heads[e], self.tails[e]]).astype(np.int64)
                frontier = _unique(ends[~node_seen[ends]])
                node_seen[frontier] = True
                node_levels.append(frontier)
                if max_edges is not None and n_edges >= max_edges:
                    break
        finally:  # leave the scratch masks clean (cost O(visited), not O(graph))
            for part in edge_parts:
                edge_seen[part] = False
            for level in node_levels:
                node_seen[level] = False
        edges = np.sort(np.concatenate(edge_parts)) if edge_parts else np.empty(0, np.int64)
        return np.sort(np.concatenate(node_levels)), edges

    def _adjacency_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """``(adj_ptr, adj_rows)`` for single-node lookups in plain Python, built on first use
        (16 bytes per edge end, 8 per node): the edges touching node ``v``, each once (a
        self-loop too), in edge-id order, are the rows ``adj_rows[adj_ptr[v]:adj_ptr[v+1]]``
        of ``(head, rel, tail, edge id)``. One contiguous slice then gives a node's outgoing
        and incoming edges, which would otherwise take several slices and a fancy index (slow
        for a few elements). Edge-id order is also index order within an *(node, rel)* block
        in both directions (edges are sorted by head, relation, tail)."""
        tables = self._adj_tables
        if tables is None:
            n, e = self.num_nodes, self.num_edges
            not_loop = np.flatnonzero(self.heads != self.tails)
            owner = np.concatenate((self.heads, self.tails[not_loop])).astype(np.int64)
            edge = np.concatenate((np.arange(e, dtype=np.int64), not_loop))
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(owner, minlength=n), out=ptr[1:])
            if e and n * e < _INT64_LIMIT:  # sort by (owner, edge) as one packed int64 key
                owner *= e
                owner += edge
                owner.sort()
                edge = owner % e
            else:
                edge = edge[np.lexsort((edge, owner))]
            del owner
            rows = np.stack((self.heads[edge], self.rels[edge], self.tails[edge],
                             edge.astype(INDEX_DTYPE)), axis=1)
            tables = self._adj_tables = (ptr, rows)
        return tables
