"""Worker threads for UltraQuery's entity layers: a layer's rows split over the cores.

A layer of :class:`kgrag.methods.ultrag.ultraquery.UltraQueryModel` has two halves: the message
sums (one fused numba pass, :mod:`kgrag.methods.ultrag._kernels`, single-threaded) and the
update (PyTorch matrix products and a layer norm, on PyTorch's threads). Running the sums on a
second thread *between* PyTorch's operations does not pay: PyTorch's OpenMP threads keep
spinning for a while after each operation and take the core the second share needs (MetaQA,
2 cores: one layer's sums 9 ms on one thread, 6.3 ms on two alone, 11 ms on two right after a
PyTorch operation). So with ``n > 1`` PyTorch threads the rows are split into parts instead,
and each worker runs *both* halves of its parts -- the sums and PyTorch's update, with PyTorch
set to one thread on that worker -- while the calling thread leaves graph-sized PyTorch work
to them (:func:`layer_workers`), so no OpenMP team is spinning. Rows depend on the whole
previous layer, so the parts of one layer all finish before the next starts
(:func:`run_parts`).

PyTorch's thread count for OpenMP is per thread: a worker set to one thread stays so, whatever
the calling thread's setting (checked: a worker's 1024 x 1024 product ran on one core with the
process at two threads).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: parts per worker a layer is split into (taken in turn as workers free up, so an unlucky
#: part does not leave the other core idle)
PARTS_PER_WORKER = 4


@dataclass(frozen=True)
class Workers:
    """A pool of ``count`` threads to split a layer's rows over."""

    pool: ThreadPoolExecutor
    count: int


def parts(workers: Workers | None) -> int:
    """How many parts to split a layer into for ``workers`` (None: this thread alone)."""
    return PARTS_PER_WORKER * (workers.count if workers is not None else 1)


_pools: dict[int, Workers] = {}
_pools_lock = threading.Lock()
_local = threading.local()


def _forget_pools_after_fork() -> None:
    """A forked child has none of the parent's threads: its first split layer starts new pools
    (an inherited one would queue the parts for workers that do not exist and wait forever)."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()
    _local.pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


def _single_threaded_torch() -> None:
    """Worker start-up: PyTorch on one thread (read first, as PyTorch sets a new thread's
    count from the process-wide one on its first use, which would undo the setting)."""
    import torch

    torch.get_num_threads()
    torch.set_num_threads(1)


def pool(count: int) -> Workers:
    """The process's pool of ``count`` threads (made once, kept).

    Its threads are all started here, each setting PyTorch to one thread for itself; that
    call also sets the count PyTorch gives threads on their first use, so the caller's count
    is put back afterwards (a thread starting PyTorch work later is not left at one)."""
    import torch

    with _pools_lock:
        found = _pools.get(count)
        if found is None:
            threads = torch.get_num_threads()
            executor = ThreadPoolExecutor(count, thread_name_prefix="kgrag-ultraquery",
                                          initializer=_single_threaded_torch)
            started = threading.Barrier(count)
            for future in [executor.submit(started.wait) for _ in range(count)]:
                future.result()
            torch.set_num_threads(threads)
            found = _pools[count] = Workers(executor, count)
        return found


@contextmanager
def layer_workers(enabled: bool = True) -> Iterator[Workers | None]:
    """The pool to split layers over: one thread per PyTorch thread of the caller. None --
    run everything on the calling thread, as is -- with one PyTorch thread or ``enabled``
    False. Re-entrant: a nested use on the same thread gets the same pool.

    The caller's own PyTorch setting is left alone (changing it would also change what other
    threads get on their first use of PyTorch); instead the caller keeps graph-sized work off
    its own thread while it holds the pool -- numpy, or parts on the workers -- so that no
    OpenMP team of its own is left spinning beside the workers (measured: keeping a ~3 MB
    product and the final sigmoid on the caller's two threads cost 12 % of a projection)."""
    import torch

    active = getattr(_local, "pool", None)
    if active is not None or not enabled:
        yield active
        return
    workers = torch.get_num_threads()
    if workers < 2:
        yield None
        return
    _local.pool = pool(workers)
    try:
        yield _local.pool
    finally:
        _local.pool = None


def run_parts(workers: Workers | None, task: Callable[[int, int], Any],
              bounds: Sequence[int]) -> None:
    """``task(lo, hi)`` for each consecutive pair of ``bounds``: on ``workers`` (in inference
    mode, taken in turn as they free up), or on this thread when None or one part. Returns
    when every part has finished -- also when one fails or the caller is interrupted (parts
    not yet started are cancelled), so no worker writes into buffers the caller reuses."""
    parts = list(zip(bounds[:-1], bounds[1:]))
    if workers is None or len(parts) < 2:
        for lo, hi in parts:
            task(lo, hi)
        return
    futures: list[Future[None]] = [
        workers.pool.submit(_in_inference_mode, task, int(lo), int(hi)) for lo, hi in parts]
    try:
        for future in futures:
            future.result()
    finally:
        for future in futures:
            future.cancel()
        wait(futures)


def _in_inference_mode(task: Callable[[int, int], Any], lo: int, hi: int) -> None:
    import torch

    with torch.inference_mode():
        task(lo, hi)


def thread_buffer(name: str, shape: tuple[int, ...]) -> Any:
    """This thread's float32 scratch tensor ``name`` of ``shape`` (kept and reused while the
    shape stays the same: allocating blocks afresh let their pages go back to the system)."""
    import torch

    found = getattr(_local, name, None)
    if found is None or tuple(found.shape) != shape:
        found = torch.empty(shape)
        setattr(_local, name, found)
    return found


def even_bounds(count: int, parts: int, least: int) -> list[int]:
    """``parts`` or fewer near-equal ranges of ``range(count)``, each at least ``least`` long
    (one range when ``count < 2 * least``)."""
    parts = max(1, min(parts, count // max(least, 1)))
    return [count * i // parts for i in range(parts + 1)]
