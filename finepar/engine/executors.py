"""Executors: how a step's launches reach the devices (DESIGN.md §2, "engine").

Every executor runs one row operation over the engine's stores, honours the
halo exchange, waiting (``wait=False`` enqueues and returns at once) and
timing, and returns the step's two sums.

* :class:`StaticExecutor`: both devices' launches are enqueued at once, each
  on its own queue (the co-run of FinePar TKDE §3.2); a queue launch (CF-Q,
  SJ-Q) gets its block counter zeroed first.
* :class:`ProfilingExecutor`: the first steps of a split-join schedule
  (throttling-atc18 §3.3): each step is one profiling pass that runs every
  node of one level of the SJ-tree standalone and times it; after the last
  pass, Algorithm 3 picks the cheapest cover and the store switches to it.
* :class:`HostChunkExecutor` and :class:`DeviceCounterExecutor`: the dynamic
  baseline (FinePar TKDE Table 2): row chunks handed out as devices finish,
  by the host (split memory) or by a counter both devices share (shared memory).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..device import cl
from .timing import StepRecord, event_seconds

#: A step the host waits for submits each launch as it is enqueued
#: (:meth:`finepar.engine.memory.Store.enqueue`'s ``flush``).
FLUSH_EACH_LAUNCH = True


class StaticExecutor:
    """Enqueue every launch of every role, then (unless ``wait=False``) wait, sum and
    exchange."""

    name = "static"

    def step(self, eng, op, args: dict, roles: tuple, *, wait: bool, exchange: str | None,
             slot: int | None = None):
        """One row operation; see :meth:`finepar.engine.Engine.rowop`."""
        t0 = time.perf_counter()
        rec = StepRecord("rowop", roles)
        events: dict[str, list] = {r: [] for r in roles}
        uploads: dict[str, list] = {}
        reads, ols = [], {}
        for role in roles:
            store = eng.stores[role]
            ol = ols[role] = store.ops(op, eng.fscal[role], eng.stop[role])
            q = store.side.queue
            ol.sum_into(0 if slot is None else slot)
            events[role] = store.enqueue(ol, eng.step_args(args, role),
                                         flush=wait and FLUSH_EACH_LAUNCH)
            rec.launches[role] = len(events[role])
            if store.ring is not None:
                uploads[role] = store.ring.uploads
            if ol.reduce is not None and (wait or slot is not None):
                ol.enqueue_reduce(q, 0 if slot is None else slot)
        if wait:
            mod = cl()
            eng.after_kernels(exchange)  # before the sums' reads, in order behind the kernels
            for role, ol in ols.items():
                if ol.reduce is not None:
                    reads.append((role, mod.enqueue_copy(eng.stores[role].side.queue,
                                                         ol.host, ol.reduced,
                                                         is_blocking=False)))
        eng.last_events = events
        if not wait:
            for role in roles:  # submit now: NVIDIA's driver holds commands until a flush
                eng.stores[role].side.queue.flush()
            rec.pending_uploads = uploads  # timed by drain()
            eng.pending.append((rec, events, t0))
            return None
        xevents = eng.halo_events(exchange) if exchange and len(roles) == 2 else []
        total = np.zeros(2, dtype=np.float64 if op.part_dtype == np.float32 else np.int64)
        for role, ev in reads:
            ev.wait()
            total += eng.stores[role].ops(op, None, None).host
        for role in roles:
            if events[role]:
                events[role][-1].wait()
            eng.time_step(rec, role, events[role])
            if role in uploads:
                rec.upload[role] = event_seconds(uploads[role])
                rec.streamed_bytes[role] = eng.stores[role].describe()["streamed_bytes"]
        eng.host_syncs += 1  # the step's reads and ends, waited for together
        if xevents:
            for ev in xevents:
                ev.wait()
            rec.exchange = event_seconds(xevents)[0]
        rec.wall = time.perf_counter() - t0
        eng.add_record(rec, t0)
        return total


class ProfilingExecutor(StaticExecutor):
    """Split-join's online profiling (throttling-atc18 §3.3, Algorithm 3).

    The GPU share's store holds a throttled lowering with its SJ-tree. Step
    ``d`` (a profiling pass) runs the nodes of tree level ``d`` (and leaves
    above it again), one launch each, timed by their events: every pass covers
    each partition once, so it is a correct step. After the last pass the
    cheapest cover of the tree (Algorithm 3) becomes the store's launches and
    the executor behaves as :class:`StaticExecutor`.

    Parameters
    ----------
    role : str
        The role whose store is throttled (the GPU).
    queue : bool
        SJ-Q: the chosen cover's launches take their blocks from a queue.
    """

    name = "sj-profile"

    def __init__(self, role: str, *, queue: bool = False):
        from ..throttle.schedule import profiling_passes
        self.role = role
        self.queue = queue
        self._passes = None
        self._profiling_passes = profiling_passes
        self.stime = None
        self.cover = None
        self.chosen_after = 0
        self.given = False

    def use_cover(self, eng, cover: list) -> None:
        """Skip the profiling passes: run ``cover`` (SJ-tree nodes a run measured before,
        kept by the prepared-graph cache) from the first step."""
        self.cover, self.given = [int(v) for v in cover], True
        eng.stores[self.role].relaunch(self.cover, queue=self.queue)

    def step(self, eng, op, args: dict, roles: tuple, *, wait: bool, exchange: str | None,
             slot: int | None = None):
        store = eng.stores[self.role]
        tree = store.low.partitions.tree
        if self._passes is None:
            self._passes = self._profiling_passes(tree)
            self.stime = np.full(len(tree.lo), np.nan)
        if self.cover is not None or self.role not in roles:
            return super().step(eng, op, args, roles, wait=wait, exchange=exchange, slot=slot)
        nodes = self._passes[self.chosen_after]
        store.relaunch(nodes, queue=False)
        total = super().step(eng, op, args, roles, wait=True, exchange=exchange, slot=slot)
        evs = eng.last_events.get(self.role, [])[:len(nodes)]
        for v, ev in zip(nodes, evs):
            t = (ev.profile.end - ev.profile.start) * 1e-9
            self.stime[v] = t if np.isnan(self.stime[v]) else min(self.stime[v], t)
        self.chosen_after += 1
        if self.chosen_after == len(self._passes):
            from ..throttle.schedule import best_cover
            _, self.cover = best_cover(tree, self.stime)
            store.relaunch(self.cover, queue=self.queue)
        return total


class HostChunkExecutor(StaticExecutor):
    """The dynamic baseline in split memory: the host hands out chunks.

    The GPU takes chunks from the front and the CPU from the back; whenever a
    device's chunk completes (an event callback, no polling) the host enqueues
    its next one, until the two ends meet. Each device holds the whole CSR. A
    device writes only the rows of its chunks, so afterwards the rows the GPU
    computed (a prefix) and those the CPU computed (a suffix) of every vector
    the step writes are copied to the other side.
    """

    name = "dynamic-host"

    def __init__(self):
        self.split_row = None  # rows [0, split_row) ran on the GPU in the last step

    def step(self, eng, op, args: dict, roles: tuple, *, wait: bool, exchange: str | None,
             slot: int | None = None):
        import queue as _queue
        mod = cl()
        t0 = time.perf_counter()
        rec = StepRecord("rowop", roles)
        bound = {r: eng.step_args(args, r) for r in roles}
        ols = {r: eng.stores[r].ops(op, eng.fscal[r], eng.stop[r]) for r in roles}
        for r in roles:  # only the chunks a side takes write their partial sums
            if ols[r].partials is not None:
                mod.enqueue_fill_buffer(eng.stores[r].side.queue, ols[r].partials,
                                        np.zeros(1, np.int32), 0, ols[r].partials.size)
        n_chunks = len(eng.stores[roles[0]].low.launches)
        span = [0, n_chunks - 1]  # next chunk from the front (GPU), from the back (CPU)
        events: dict[str, list] = {r: [] for r in roles}
        done: _queue.Queue = _queue.Queue()
        complete = mod.command_execution_status.COMPLETE

        def hand_out(role: str) -> bool:
            if span[0] > span[1]:
                return False
            c = span[0] if role == "gpu" else span[1]
            span[0 if role == "gpu" else 1] += 1 if role == "gpu" else -1
            ev = ols[role].launches[c].bind(**bound[role]).enqueue(eng.stores[role].side.queue)
            events[role].append(ev)
            ev.set_callback(complete, lambda status, role=role: done.put(role))
            return True

        running = sum(hand_out(r) for r in roles)
        eng.host_syncs += 1  # the hand-out waits for the devices until the ends meet
        while running:
            role = done.get()
            running -= 1
            running += hand_out(role)
        bounds = eng.stores[roles[0]].low.blk_ptr
        self.split_row = int(bounds[span[0]])
        total = np.zeros(2, dtype=np.float64 if op.part_dtype == np.float32 else np.int64)
        for role in roles:
            ol = ols[role]
            q = eng.stores[role].side.queue
            if ol.reduce is not None:
                ol.enqueue_reduce(q, 0)
                mod.enqueue_copy(q, ol.host, ol.reduced, is_blocking=True)
                eng.host_syncs += 1
                total += ol.host
            rec.kernel[role], rec.span[role] = event_seconds(events[role])
            rec.launches[role] = len(events[role])
        if not eng.pair.shared and len(roles) == 2:
            xev = []
            for slot_name in op.writes:
                if args.get(slot_name):
                    xev += self.copy_ranges(eng, args[slot_name])
            rec.exchange = event_seconds(xev)[0] if xev else 0.0
        rec.wall = time.perf_counter() - t0
        eng.add_record(rec, t0)
        eng.last_events = events
        return total

    def copy_ranges(self, eng, name: str) -> list:
        """Copy the GPU's prefix of vector ``name`` to the CPU, the CPU's suffix to the GPU."""
        mod = cl()
        dtype = eng._vec_dtype[name]
        host = np.empty(eng.n, dtype=dtype)
        s, evs = self.split_row, []
        for src, dst, lo, hi in (("gpu", "cpu", 0, s), ("cpu", "gpu", s, eng.n)):
            if hi <= lo:
                continue
            part = host[lo:hi]
            e1 = mod.enqueue_copy(eng.pair.side(src).queue, part, eng.buffer(name, src),
                                  src_offset=lo * dtype.itemsize, is_blocking=True)
            e2 = mod.enqueue_copy(eng.pair.side(dst).queue, eng.buffer(name, dst), part,
                                  dst_offset=lo * dtype.itemsize, is_blocking=True)
            eng.host_syncs += 2
            evs += [e1, e2]
        return evs


class DeviceCounterExecutor(StaticExecutor):
    """The dynamic baseline in shared memory: chunks handed out on the devices.

    One context holds a chunk counter that both devices' persistent work-groups
    update atomically (the GPU's from the front, the CPU's from the back;
    ``opencl/skeleton/rowop.cl`` MAPPING 5), as the paper's baseline does on an APU:
    the host only zeroes the counter and launches both kernels.
    """

    name = "dynamic-device"

    def step(self, eng, op, args: dict, roles: tuple, *, wait: bool, exchange: str | None,
             slot: int | None = None):
        mod = cl()
        first = eng.stores[roles[0]]
        mod.enqueue_fill_buffer(first.side.queue, first.counter, np.zeros(1, np.int32), 0, 4)
        first.side.queue.finish()  # both queues must see the zeroed counter
        eng.host_syncs += 1
        return super().step(eng, op, args, roles, wait=wait, exchange=None, slot=slot)


@dataclass
class DynamicPolicy:
    """When a frontier app's iteration runs on both devices (FinePar TKDE §4.2).

    An iteration co-runs over the plan only when its frontier touches at least
    ``frontier_fraction`` of all nonzeros; otherwise one device (the push role)
    runs it alone from the frontier. Once ``stop_fraction`` of the nonzeros
    have been processed the policy stops counting and the remaining iterations
    run alone.

    Attributes
    ----------
    enabled : bool
        False: every iteration co-runs over all rows (static partition).
    frontier_fraction : float
    stop_fraction : float
    """

    enabled: bool = True
    frontier_fraction: float = 0.2
    stop_fraction: float = 0.8

    def corun(self, frontier_edges: int, processed_edges: int, nnz: int, two_roles: bool) -> bool:
        """Decide for the next iteration."""
        if not self.enabled:
            return True
        if two_roles and processed_edges >= self.stop_fraction * nnz:
            return False
        return frontier_edges >= self.frontier_fraction * max(nnz, 1)
