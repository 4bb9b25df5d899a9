"""BFS's levels over the ranks of a distributed run (DESIGN.md §3, "mpi").

The 1-D distributed BFS of Buluç and Madduri (SC'11) with Beamer's direction switch
(SC'12), on an engine over one rank's rows (``DistEngine``, more than one rank): every
rank keeps every vertex's level, its own vertices' parents and the merged frontier as a
bitmap on its push device.

* **top-down**: the rank's push device expands the frontier along the rank's own
  vertices' out-edges (its rows of the graph, ``RankGraph``), claiming unvisited
  vertices anywhere; the rank's part is its claims' list, or their bitmap where they
  outnumber its words;
* **bottom-up**: each rank's unvisited rows look for a frontier in-neighbour (the plan's
  row operation), setting bits of its own words only; the rank's part is its own words
  (a contiguous run: its vertices are a range), or their vertices' list where fewer.

Each level crosses the ranks once (:class:`LevelParts`): one small ``MPI_Allgather`` of
every part's size and form (and a bottom-up level's sums), each rank's part read from
the device into its place in page-locked host memory, one ``allgatherv`` in place, the
others' parts written to the device and OR-ed into the frontier bitmap by kernels
(``opencl/apps/bfs/ranks.cl``), which then marks the new vertices' levels, left
enqueued. With ``--exchange gpu`` the parts move GPU to GPU instead
(:mod:`finepar.mpi.peers`): each rank's part goes into its send region (a bottom-up
level's copied there on the device, with no read to the host), every other
rank's is copied into the receive region by the rank's GPU, and the kernels on the GPU
read them there (a CPU share's are copied on to the host). On that path a level's part
is staged: copied into the send region on the device before the level's header is read
(a bottom-up level stages both forms, the list at the half's start and the words at its
end, where the half holds both), so once every rank has read its header and the sizes'
collective is done, the peers copy it with no post and no barrier
(:meth:`LevelParts.stage`). A level's host waits are its reads: a bottom-up level's header
(its found vertices and their out-degrees, summed on the device) with the list's first
:data:`PEEK` words, and a longer part where it crosses the host; a top-down level's
tally, then its claims' out-degrees (summed on the device), which go with the sizes,
and its part where it crosses the host. The merged frontier (the ranks' claims may
overlap) is counted from the sizes where one rank claimed, from short lists where they
crossed the host, else on the device. No n-long host array is touched a level. The
direction is Beamer's rule (:meth:`~finepar.apps.bfs.BFS.wants_pull`) on the merged
frontier's size and edges, which every rank has alike. A vertex another rank claimed
gets its parent at the end: each rank sends the (vertex, parent) pairs it holds for
other ranks' vertices (found on the device) to their owners, once (GPU to GPU through
the merges' regions where they fit, with one host wait for the counts). (An owner
finding them from the levels every rank holds, an in-neighbour one level up, sends
nothing, but a work-item's scan of a hub neighbour's row for the root took 89 ms on an
H100 at Graph500 scale 26, against the hand-over's 2.8 ms: 2026-11-27.) The root's
children are the exception: their parent is the root whoever claimed them, so their
owner sets it from their level and no pair is sent for them (at Graph500 scale 26 on two
ranks they were every pair: 1 M of them).

Each level leaves a record (``st['rank_levels']``, the report's ``levels`` per rank):
direction, frontier, found, the part's form and size, kernel, exchange and MPI seconds,
bytes sent and received, host synchronisations.
"""

from __future__ import annotations

import time

import numpy as np

from ..device import PinnedHost, alloc, cl
from ..engine import Engine
from ..engine.frontier import PushRun
from ..engine.binding import bind_changed, own_kernel
from ..engine.timing import event_seconds
from ..engine.trace import FrontierTrace
from ..engine.backref import EngineRef

#: The kernels of the merges, the levels' marks and the parents.
SOURCES = ("apps/bfs/ranks.cl",)
KERNELS = ("bits_from_list", "or_words", "own_part", "list_edges", "mark_sparse",
           "mark_dense", "claimed_pairs", "set_parents", "root_children")
#: A part's form: a vertex list, or a run of bitmap words.
AS_LIST, AS_WORDS = 0, 1
FORMS = {AS_LIST: "list", AS_WORDS: "words"}
#: Words of a bottom-up level's list read with its header (one read where it fits).
PEEK = 16384
#: The fewest words a rank's part of the GPU path's regions holds (256 KiB): a level's
#: part needs ``ceil(n / 32) + 2``, the parents' hand-over two a pair, which goes GPU to
#: GPU where every rank's pairs fit (Graph500 scale 26 on two ranks: 16 pairs once the
#: root's children need none).
REGION_WORDS = 1 << 16
#: The most claims over every rank whose union a top-down level counts on the host.
HOST_UNION = 65536


def ranks(engine: Engine) -> int:
    """The ranks a level's frontier is merged over: a distributed engine's, else 1."""
    return getattr(engine, "ranks", 1)


def _kernel(engine: Engine, role: str, name: str):
    """``engine``'s own kernel object ``name`` of :data:`SOURCES` on ``role``
    (:func:`~finepar.engine.binding.own_kernel`: its bound arguments, the engine's
    buffers, live as long as the engine and no longer, so a launch sets only what changed
    since the last, across runs; a launch that sets every argument cost 25-90 us of host
    time on an H200's host, 2026-11-28)."""
    return own_kernel(engine, engine.pair.kernel(engine.pair.side(role), SOURCES, {}, name))


def _launch(engine: Engine, role: str, name: str, size: int, args: tuple) -> None:
    """Enqueue kernel ``name`` of :data:`SOURCES` (every launch of them comes here, so
    only the arguments that changed are set: :func:`bind_changed`, on the engine's own
    kernel objects, :func:`_kernel`)."""
    kernel = _kernel(engine, role, name)
    bind_changed(kernel, args)
    engine.launch(role, kernel, size, None, kind="queue", wg=256, wait=False)


def prepare(engine: Engine, push: str, n: int) -> dict:
    """What the levels over the ranks keep between runs: the count buffer of the marks
    and the merges' buffers (:class:`LevelParts`); every kernel built now (a build in a
    timed run would stall every rank: a PoCL build takes a few hundred milliseconds)."""
    for role in engine.roles:
        for name in KERNELS:
            _kernel(engine, role, name)
    return {"mark_counts": engine.scratch(push, np.zeros(2, np.uint64)),
            "parts": LevelParts(engine, push, n)}


class LevelParts:
    """One level's frontier merged over the ranks (collective; see the module's text).

    Parameters
    ----------
    engine : DistEngine
        Its ``comm``, ``partition`` (every rank's vertices a contiguous range) and
        buffers.
    push : str
        The push role (top-down levels run there).
    n : int
        Vertices.

    Attributes
    ----------
    nw : int
        Words of a vertex bitmap, ``ceil(n / 32)``.
    spans : ndarray of int64, shape (ranks, 2)
        Each rank's words ``[w0, w1)`` (neighbours share a word where their bound is not
        a multiple of 32: their parts are OR-ed, so it needs no care).
    host : ndarray of uint32
        Page-locked host words every rank's part lands in (``ranks * (nw + 2)`` words to
        start; grows only for the parents' hand-over).
    hdr : pyopencl.Buffer
        Two uint64 on the push side: a part's vertices and their out-degrees.
    head : ndarray of uint32
        Page-locked: ``hdr``'s four words, then up to :data:`PEEK` words of the part read
        with them.
    peers : PeerExchange or None
        The GPU path's regions (``--exchange gpu``: a part of ``nw + 2`` words a rank, or
        twice its largest span, at least :data:`REGION_WORDS`), else None: the parts go
        through the host.
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine, push: str, n: int):
        self.engine, self.comm, self.push, self.n = engine, engine.comm, push, n
        self.nw = (n + 31) // 32
        b = engine.partition.bounds.astype(np.int64)
        self.spans = np.stack((b[:-1] // 32, -(-b[1:] // 32)), axis=1)
        self.host = np.zeros(0, np.uint32)
        self._pinned = self._held = None
        self.dev: dict = {}
        self.counts = engine.scratch(push, np.zeros(self.comm.size + 1, np.int32))
        self.hdr = engine.scratch(push, np.zeros(2, np.uint64))
        side = engine.pair.side(push)
        self._head = PinnedHost(side, np.zeros(0, np.uint32), size=4 + PEEK)
        self.head = self._head.host
        self.pending: list = []
        words = self.comm.size * (self.nw + 2) + 2
        self.host_words(words)
        for role in engine.roles:
            self.device_words(role, words)
        # the GPU path where the run's exchanges take it (DistEngine.peer_exchange: a part a rank,
        # closed with the engine); at least REGION_WORDS, so a small graph's parents'
        # hand-over fits too, and twice the largest span, so a bottom-up level stages both
        # its forms (stage, words_at: at two ranks nnz-balanced spans pass nw / 2)
        span = int((self.spans[:, 1] - self.spans[:, 0]).max())
        region = max(self.nw + 2, 2 * span, REGION_WORDS)
        self.peers = engine.peer_exchange(engine.pair.side("gpu"), 4 * region,
                                          4 * self.comm.size * region, "merges")

    def _grown(self, pinned, words: int):
        """``pinned`` (a :class:`PinnedHost` or None), or a new one where it holds fewer
        than ``words`` words."""
        if pinned is None or pinned.host.size < words:
            pinned = PinnedHost(self.engine.pair.side(self.push), np.zeros(0, np.uint32),
                                size=max(words, 1))
        return pinned

    def host_words(self, words: int) -> np.ndarray:
        """The page-locked host words, at least ``words`` of them."""
        if self.host.size < words:
            self._pinned = self._grown(self._pinned, words)
            self.host = self._pinned.host
        return self.host

    def device_words(self, role: str, words: int, use: str = "parts"):
        """``role``'s staging buffer for ``use`` of at least ``words`` words: ``parts``
        (the levels' parts, sized once as the merges are made) or ``pairs`` (the parents'
        hand-over, grown as a run's claims need). Apart, so a hand-over's growth never
        replaces a buffer the levels' kernels hold: the replaced buffer is freed when
        its last holder lets it go, and on NVIDIA's driver a free waits for the device
        (1.1 ms of a run's first bottom-up level on an H200, 2026-11-28)."""
        have = self.dev.get((role, use))
        if have is None or have[1] < words:
            have = self.dev[role, use] = (alloc(self.engine.pair.side(role), nbytes=4 * words),
                                          words)
        return have[0]

    def zero_hdr(self) -> None:
        """``hdr`` <- 0 (enqueued on the push side)."""
        cl().enqueue_fill_buffer(self.engine.pair.side(self.push).queue, self.hdr,
                                 np.zeros(1, np.uint64), 0, 16)

    def read(self, role: str, copies: list) -> None:
        """Enqueue ``copies`` (``(host, buffer, first_word)``: host <- the buffer's words
        from ``first_word``) on ``role``'s queue and wait for the last: one host
        synchronisation however many copies."""
        mod, queue = cl(), self.engine.pair.side(role).queue
        evs = [mod.enqueue_copy(queue, host, buf, src_offset=4 * first, is_blocking=False)
               for host, buf, first in copies if host.size]
        if evs:
            evs[-1].wait()
            self.engine.host_syncs += 1

    def read_header(self, role: str, peek_buf=None, peek: int = 0) -> tuple[int, int]:
        """``hdr`` (a part's vertices and out-degrees) and, with ``peek_buf``, its first
        ``peek`` words (at most :data:`PEEK`) into ``head[4:]``: one read."""
        self.read(role, [(self.head[:4], self.hdr, 0),
                         (self.head[4:4 + min(peek, PEEK)], peek_buf, 0)])
        count, edges = self.head[:4].view(np.uint64)
        return int(count), int(edges)

    def _gpu_to_gpu(self, targets: tuple, host: np.ndarray, counts: np.ndarray,
                    displs: np.ndarray, at: int, mine: int, source=None,
                    staged=None) -> tuple:
        """With :attr:`peers` (``--exchange gpu``): this rank's part into the send region
        (from ``source``, ``(buffer, first word)`` on the GPU, where given: a copy on the
        device; else from ``host``; nothing where ``staged``, every rank's word from the
        merge's collective, says where :meth:`stage` put each part), every other rank's
        pulled into the receive region at its displacement (collective), and copied on to
        ``host`` where a role outside the GPU's context needs them; the roles whose
        kernels read the receive region. Else ``()``."""
        px = self.peers
        if px is None:
            return ()
        eng, mod, me = self.engine, cl(), self.comm.rank
        near = tuple(r for r in targets if eng.pair.side(r).context == px.side.context)
        ready = staged is not None
        if not ready:  # staged: the level's read on this queue waited for it already
            for role in near:  # the last merge's kernels are done with the receive region
                eng.pair.side(role).queue.finish()
            self.post(mine, source, host[at:at + mine])
        src = staged if ready else np.zeros(self.comm.size, np.int64)
        px.move([(s, 4 * int(src[s]), 4 * int(displs[s]), 4 * int(counts[s]))
                 for s in range(self.comm.size) if s != me and counts[s]], barrier=not ready)
        total = int(counts.sum())
        if total and len(near) < len(targets):
            for a, b in ((0, at), (at + mine, total)):  # this rank's own part is there
                if b > a:
                    mod.enqueue_copy(px.side.queue, host[a:b], px.recv, src_offset=4 * a)
            px.side.queue.finish()
        return near

    def post(self, mine: int, source=None, host_part=None) -> None:
        """This rank's ``mine`` words into the current half of the send region, from
        ``source`` (``(buffer, first word)`` on the GPU's context: a copy on the device)
        or else ``host_part``, and done (with the GPU's earlier commands, the last merge's
        kernels on the receive region among them) before the peers copy out of it."""
        px, mod = self.peers, cl()
        if mine and source is not None:
            mod.enqueue_copy(px.side.queue, px.send, source[0], src_offset=4 * source[1],
                             dst_offset=px.at, byte_count=4 * mine)
        elif mine:
            mod.enqueue_copy(px.side.queue, px.send, host_part, dst_offset=px.at,
                             is_blocking=True)
        px.side.queue.finish()

    def direct(self, role: str) -> bool:
        """Whether a part lying on ``role``'s device goes GPU to GPU from there (the GPU
        path, ``role`` in the GPU's context), never read to the host."""
        return (self.peers is not None
                and self.engine.pair.side(role).context == self.peers.side.context)

    def held_words(self, words: int) -> np.ndarray:
        """Page-locked host words (at least ``words``) a part is read into before the
        merge's collective, with its header, where it crosses the host."""
        self._held = self._grown(self._held, words)
        return self._held.host

    def stage(self, role: str, source, first: int, words: int, at: int = 0) -> bool:
        """Copy ``words`` words of ``source`` from word ``first`` into word ``at`` of the
        current half of the send region, on the device and not waited for: the level's
        next read (its header) waits for it, and every rank makes that read before the
        merge's collective, so the peers may copy the part once that is done (no
        :meth:`post`, no barrier). False (nothing staged) without the GPU path, where
        ``role``'s queue is not the GPU's (another context, or shared memory's second
        queue: nothing would order the copy after the part's kernels), or where the part
        would not fit its half."""
        px = self.peers
        if (px is None or self.engine.pair.side(role).queue is not px.side.queue
                or 4 * (at + words) > px.half):
            return False
        if words:
            cl().enqueue_copy(px.side.queue, px.send, source, src_offset=4 * first,
                              dst_offset=px.at + 4 * at, byte_count=4 * words)
        return True

    def words_at(self, rank: int) -> int:
        """Where in ``rank``'s half a bottom-up level stages its part's words (the list
        staged at word 0 beside them; see :meth:`stage`): the half's last words, or -1
        where the half cannot hold both (then the words are posted at 0 once chosen)."""
        w0, w1 = (int(x) for x in self.spans[rank])
        at = self.peers.halves[rank] // 4 - (w1 - w0)
        return at if at >= w1 - w0 else -1

    def wait(self) -> None:
        """The last merge's uploads are done (their host words may be overwritten)."""
        for ev in self.pending:
            ev.wait()
        self.pending = []

    def merge(self, target: str, roles: tuple, form: int, size: int, first: int,
              sums: tuple, fill, source=None, staged: int = -1) -> tuple[np.ndarray, dict]:
        """Merge every rank's part into bitmap ``target`` on ``roles`` (collective).

        Parameters
        ----------
        target : str
            A bitmap vector holding this rank's own part already (its bits).
        roles : tuple of str
            The roles whose copies of ``target`` receive the others' parts.
        form : int
            :data:`AS_LIST` (``size`` vertex ids) or :data:`AS_WORDS` (``size`` words
            from word ``first``).
        sums : tuple of int
            Numbers every rank gets with the sizes (a level's found vertices and their
            out-degrees; a top-down level's claims and theirs).
        fill : callable
            ``fill(host)`` puts this rank's part into ``host`` (uint32, ``size`` long):
            one read at most.
        source : tuple, optional
            ``(role, buffer, first word)``: where this rank's part lies on a device. Where
            the part goes GPU to GPU from that device's context, it is copied on the
            device into the send region and ``fill`` is not called (no host round trip).
        staged : int
            The word of the send region's half where :meth:`stage` put the part already
            (its header read since), or -1. Where every rank staged its part, the peers
            copy it from there with no post and no barrier.

        Returns
        -------
        (ndarray, dict)
            Every rank's ``[size, form, first, staged, *sums]`` (int64, one row a rank),
            the parts' displacements in :attr:`host`; this rank's bytes sent and received,
            the exchange's seconds and whether the parts were staged.
        """
        comm, eng = self.comm, self.engine
        t0, m0 = time.perf_counter(), comm.mpi_seconds
        self.wait()
        meta = comm.allgather_ints([size, form, first, staged, *sums])
        counts = meta[:, 0]
        displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
        total, me = int(counts.sum()), comm.rank
        at, mine = int(displs[me]), int(counts[me])
        host = self.host_words(total)
        direct = source is not None and self.direct(source[0])
        if not direct:
            fill(host[at:at + mine])
        targets = _distinct(eng, target, roles)
        ready = direct and bool((meta[:, 3] >= 0).all())  # alike on every rank
        near = self._gpu_to_gpu(targets, host, counts, displs, at, mine,
                                source[1:] if direct else None, meta[:, 3] if ready else None)
        if total and self.peers is None:  # every rank's part, this rank's in place
            comm.allgatherv(host[at:at + mine], counts=counts, out=host[:total])
        mod = cl()
        others = [s for s in range(comm.size) if s != me and meta[s, 0]]
        for role in targets:
            dev, queue = self.device_words(role, total), eng.pair.side(role).queue
            if role in near:  # the others' parts are in the receive region already
                dev = self.peers.recv
            else:
                self.pending += [mod.enqueue_copy(queue, dev, host[a:b], dst_offset=4 * a,
                                                  is_blocking=False)
                                 for a, b in ((0, at), (at + mine, total)) if b > a]
            words = eng.buffer(target, role)
            for s in others:
                c, off = int(meta[s, 0]), int(displs[s])
                if meta[s, 1] == AS_LIST:
                    _launch(eng, role, "bits_from_list", c,
                            (np.int32(c), dev, np.int32(off), words))
                else:
                    _launch(eng, role, "or_words", c,
                            (np.int32(c), np.int32(meta[s, 2]), dev, np.int32(off), words))
            queue.flush()  # NVIDIA's driver holds commands until a flush
        seconds = time.perf_counter() - t0
        return np.column_stack((meta, displs)), {
            "bytes_sent": 4 * mine, "bytes_received": 4 * (total - mine),
            "exchange_s": seconds, "mpi_s": comm.mpi_seconds - m0, "staged": ready}


def _distinct(engine: Engine, name: str, roles: tuple) -> list:
    """``roles`` once per distinct buffer of vector ``name`` (shared memory: one)."""
    out, seen = [], set()
    for r in roles:
        if id(engine.buffer(name, r)) not in seen:
            seen.add(id(engine.buffer(name, r)))
            out.append(r)
    return out


def _level_roles(engine: Engine, st: dict) -> tuple:
    """The roles whose copies of the levels a mark writes (one buffer in shared memory)."""
    return (st["push_role"],) if engine.pair.shared else tuple(engine.roles)


#: A merged frontier of more than ``n / DENSE_MARKS`` vertices is marked a work-item a
#: vertex (``mark_dense``), a smaller one a work-item a word (``mark_sparse``): on an
#: H200 at Graph500 scale 26 a word a work-item took about 40 ps a set vertex past
#: 0.014 ms (1.12 ms for 28 M of 67 M vertices), a vertex a work-item 0.17-0.30 ms
#: whatever the count, so they cross near 6 M (2026-11-28).
DENSE_MARKS = 12


def mark_bits(engine: Engine, st: dict, name: str, value: int, count: bool,
              roles: tuple | None = None, found: int | None = None) -> tuple[int, int]:
    """``level[v] = value`` for the unvisited vertices set in bitmap ``name`` on ``roles``
    (default: every side's levels), enqueued; with ``count``, the set vertices and their
    out-degrees, counted on the push side (one 16-byte read, which waits; else zeros and
    no wait). ``found``: the set vertices where known (on the GPU a work-item a vertex
    past ``n / DENSE_MARKS`` of them, else a work-item a word)."""
    push, n = st["push_role"], st["n"]
    counts = st["mark_counts"]
    dense = found is not None and found > n // DENSE_MARKS
    if count:
        cl().enqueue_fill_buffer(engine.pair.side(push).queue, counts, np.zeros(1, np.uint64),
                                 0, 16)
    for role in roles or _level_roles(engine, st):
        mine = count and role == push
        # a vertex a work-item on the GPU only (measured there; a CPU walks words)
        kernel, size = (("mark_dense", n) if dense and role == "gpu" else
                        ("mark_sparse", (n + 31) // 32))
        _launch(engine, role, kernel, size,
                (np.int32(n), engine.buffer(name, role),
                 engine.buffer("level", role), engine.buffer("outdeg", role),
                 np.int32(value), np.int32(mine), counts if mine else engine.dummy(role)))
    if not count:
        for role in roles or _level_roles(engine, st):
            engine.pair.side(role).queue.flush()
        # one buffer under both roles' queues (shared memory): the other's next step
        # reads the marks
        engine._shared_barrier(engine.pair.side(push))
        return 0, 0
    out = np.zeros(2, np.uint64)
    engine.read_buffer(push, out, counts)
    return int(out[0]), int(out[1])


class _Level:
    """A level's record: counters of the engine at its start, read at its end. Nothing
    waits at a level's ends: the kernels a level left enqueued are timed by their events
    once the run is drained (:func:`_kernel_seconds`)."""

    def __init__(self, engine: Engine):
        self.engine, self.t0 = engine, time.perf_counter()
        self.k0, self.s0 = len(engine.records), engine.host_syncs
        self.before = {id(p[0]) for p in engine.pending}

    def record(self, **fields) -> dict:
        """``fields`` with the level's kernel seconds (the records drained since the
        level began), wall seconds and host synchronisations; the launches still pending
        are kept in ``waiting`` for :func:`_kernel_seconds`."""
        eng = self.engine
        drained = [r for r in eng.records[self.k0:] if id(r) not in self.before]
        self.waiting = [p[:2] for p in eng.pending if id(p[0]) not in self.before]
        kernel = sum(max(r.kernel.values(), default=0.0) for r in drained)
        return {**fields, "kernel_s": kernel, "wall_s": time.perf_counter() - self.t0,
                "host_syncs": eng.host_syncs - self.s0}


def _kernel_seconds(engine: Engine, levels: list, records: list) -> None:
    """Drain the run (one wait) and add to each level's ``kernel_s`` its enqueued steps'
    kernel seconds (the longest side's sum of durations, from their events); those steps'
    records get their own events' times, not a share of the batch's span (which spans
    the levels' exchanges too)."""
    engine.drain()
    for level, rec in zip(levels, records):
        for step, events in level.waiting:
            per_role = {r: event_seconds(evs) for r, evs in events.items() if evs}
            for r, (k, span) in per_role.items():
                step.kernel[r], step.span[r] = k, span
            rec["kernel_s"] += max((k for k, _ in per_role.values()), default=0.0)


def level_loop(app, engine: Engine, st: dict, max_iter: int | None
               ) -> tuple[int, FrontierTrace, str]:
    """BFS's levels over the ranks (see the module's description), from ``st`` as
    :meth:`~finepar.apps.bfs.BFS.prepare` and the run made it.

    Returns
    -------
    (int, FrontierTrace, str)
        Levels run, the trace, and ``marks``: every side and every rank holds its own
        rows' levels and parents (``Engine.read`` gathers them). ``st['rank_levels']``
        holds this rank's record of each level, then of the parents' step.
    """
    size, edges = app.start_host(engine, st)
    app.start_devices(engine, st)
    engine.drain()
    st.update(front_ready=False, claims_total=0, top_down=0, rank_levels=[])
    trace, it, where, clocks = FrontierTrace(), 0, "queue", []
    while size > 0 and (max_iter is None or it < max_iter):
        level = _Level(engine)
        pull = app.wants_pull(st, size, edges, 0, None, len(engine.roles) == 2)
        step = _bottom_up if pull else _top_down
        found, found_edges, part = step(app, engine, st, it, where, size, edges)
        where = "marks" if pull else "queue"
        st["unexplored"] -= found_edges
        here = ("both" if len(engine.roles) == 2 else engine.roles[0]) if pull \
            else st["push_role"]
        run = PushRun("pull" if pull else "step", [(size, edges, found, found_edges)], 1,
                      False, found, found_edges, "empty" if not found else "batch")
        rec = level.record(level=it, direction="bottom-up" if pull else "top-down",
                           frontier=size, frontier_edges=edges, found=found,
                           found_edges=found_edges, **part)
        st["rank_levels"].append(rec)
        clocks.append(level)
        app._record(trace, run, pull, here, it, rec["wall_s"])
        it += 1
        size, edges = found, found_edges
    level = _Level(engine)
    part = _finish(app, engine, st, where)
    st["rank_levels"].append(level.record(level=it, direction="parents", **part))
    clocks.append(level)
    _kernel_seconds(engine, clocks, st["rank_levels"])
    return it, trace, "marks"


def _move(st: dict, to_push: bool, names: tuple) -> None:
    """The other role's rows of ``names`` to (or from) the push side (split memory with
    two roles; nothing to move otherwise: every side's levels are marked alike)."""
    mover = st.get("mover")
    if mover is not None:
        (mover.to_push if to_push else mover.from_push)(names)


def _stats(engine: Engine, kind: str, form_name: str, info: dict) -> None:
    """The engine's exchange counts (the report's ``frontier``) for one merge."""
    s = engine.stats
    s["merge_seconds"] += info["exchange_s"]
    s["merge_bytes_received"] += info["bytes_received"]
    if kind == "claims":
        s["claims"] += 1
        s["claim_bytes"] += info["bytes_sent"]
    else:
        s["merges"] += 1
        s["merge_bytes"] += info["bytes_sent"]
        s["as_" + form_name] += 1


def _bottom_up(app, engine: Engine, st: dict, it: int, where: str, size: int, edges: int
               ) -> tuple:
    """One bottom-up level over every rank's rows (the frontier of ``size`` vertices and
    ``edges`` out-edges, merged): the next frontier's size and edges, and the level's
    part (form, size, exchange). Its row operation's sums are not read: its own part's
    kernel counts the rank's found vertices and their out-degrees, read with the part's
    first words (one read; a second for a part past :data:`PEEK` words where it crosses
    the host; on the GPU path both forms are staged before that read)."""
    push, parts = st["push_role"], st["parts"]
    if where == "queue":
        _move(st, False, app.sync_vectors)
        if not st["front_ready"]:  # the run's first level: the root's list
            app.marks_from_queue(engine, st)
        elif not engine.pair.shared and len(engine.roles) == 2:  # the frontier on push only
            others = tuple(r for r in engine.roles if r != push)
            engine.write("front", engine.read("front", role=push), roles=others)
    # the team size as one device picks it, from the merged frontier and the run's
    # unexplored edges: the same on every rank
    engine.rowop_local(x="front", y="parent", s0="level", s1="next", aux="outdeg",
                       ia=it, wait=False, op=app.bottom_up_op(st, edges, "bfs"))
    Engine.merge_bits(engine, "next")  # this rank's two sides' bits (split memory)
    role = push  # every side's copy holds this rank's bits now
    for r in engine.roles:  # shared memory: the other queue's bits done before own_part reads
        if r != role:
            engine._shared_barrier(engine.pair.side(r))
    me = engine.comm.rank
    w0, w1 = (int(x) for x in parts.spans[me])
    nxt, dev = engine.buffer("next", role), parts.device_words(role, w1 - w0)
    parts.zero_hdr()
    _launch(engine, role, "own_part", w1 - w0,
            (np.int32(w1 - w0), np.int32(w0), nxt, engine.buffer("outdeg", role), dev,
             parts.hdr, np.int32(w1 - w0)))
    # both forms staged for the peers before the header is read (its wait covers them)
    listed = parts.stage(role, dev, 0, w1 - w0)
    at = parts.words_at(me) if listed else -1
    worded = at >= 0 and parts.stage(role, nxt, w0, w1 - w0, at)
    found, found_edges = parts.read_header(role, dev, w1 - w0)
    if found < w1 - w0:  # its vertices' list, on the device
        form, part, staged = AS_LIST, found, 0 if listed else -1

        def fill(host):
            if found <= PEEK:
                host[:] = parts.head[4:4 + found]
            else:
                parts.read(role, [(host, dev, 0)])
    else:
        form, part, staged = AS_WORDS, w1 - w0, at if worded else -1

        def fill(host):
            parts.read(role, [(host, nxt, w0)])
    meta, info = parts.merge("next", tuple(engine.roles), form, part, w0,
                             (found, found_edges), fill,
                             source=(role, *((dev, 0) if form == AS_LIST else (nxt, w0))),
                             staged=staged)
    _stats(engine, "merges", FORMS[form], info)
    engine.swap("front", "next")
    engine.fill("next", 0)
    total = meta[:, 4:6].sum(axis=0)
    mark_bits(engine, st, "front", it + 1, count=False, found=int(total[0]))
    st["front_ready"] = True
    return int(total[0]), int(total[1]), {"own_found": found, "form": FORMS[form],
                                          "part": part, **info}


def _top_down(app, engine: Engine, st: dict, it: int, where: str, size: int, edges: int
              ) -> tuple:
    """One top-down level from this rank's own vertices of the frontier (``size``
    vertices and ``edges`` out-edges over every rank), its claims merged over the ranks;
    the next frontier's size and edges, and the level's part.

    Two reads: the advance's tally, then its claims' out-degrees (summed on the device),
    which go with the merge's sizes; the part itself goes GPU to GPU, staged in the send
    region before that read (else it is read with it and goes through the host). The
    merged frontier is counted from the sizes where the claims cannot overlap (one rank
    claimed), from short lists on the host where they came through it, else on the
    device (a third read)."""
    queue, push, parts = st["queue"], st["push_role"], st["parts"]
    if where == "marks":
        _move(st, True, app.sync_vectors)
    front = engine.buffer("front", push)
    if st["front_ready"]:  # the frontier's bitmap (every rank's vertices) -> the list
        queue.from_bitmap(front, size, edges)
    args = (engine.buffer("level", push), engine.buffer("parent", push))
    if not queue.run(it, args, batch=1, cap=1, limit=None, kind="top-down").levels:
        # a local launch that found the list past its work-group's memory ran no level
        queue.run(it, args, batch=1, cap=1, limit=None, kind="top-down", local=False)
    claims = queue.size  # this rank's claims, each once (its levels' atomics)
    st["claims_total"] += claims
    st["top_down"] += 1
    engine.fill("front", 0, (push,))
    parts.zero_hdr()
    if claims:
        _launch(engine, push, "bits_from_list", claims,
                (np.int32(claims), queue.front, np.int32(0), front))
        _launch(engine, push, "list_edges", claims,
                (np.int32(claims), queue.front, engine.buffer("outdeg", push), parts.hdr))
    if claims <= parts.nw:
        form, part, src = AS_LIST, claims, queue.front
    else:  # more claims than words: the bitmap's words
        form, part, src = AS_WORDS, parts.nw, front
    staged = 0 if parts.stage(push, src, 0, part) else -1
    held = None
    if not claims:
        claim_edges = 0
    elif parts.direct(push):  # the part goes GPU to GPU: its out-degrees alone are read
        claim_edges = parts.read_header(push)[1]
    else:  # through the host: the part read with its out-degrees, one wait
        held = parts.held_words(part)[:part]
        parts.read(push, [(held, src, 0), (parts.head[:4], parts.hdr, 0)])
        claim_edges = int(parts.head[:4].view(np.uint64)[1])

    def fill(host):  # the host path's part, read above
        host[:] = held if held is not None else 0
    meta, info = parts.merge("front", (push,), form, part, 0, (claims, claim_edges), fill,
                             source=(push, src, 0), staged=staged)
    _stats(engine, "claims", FORMS[form], info)
    engine.stats["claim_lists"] += int((meta[:, 1] == AS_LIST).all())
    found, found_edges = _merged_size(st, parts, meta)
    on_device = found < 0
    if on_device:
        found, found_edges = mark_bits(engine, st, "front", it + 1, count=True,
                                       roles=(push,))
    else:
        mark_bits(engine, st, "front", it + 1, count=False, roles=(push,), found=found)
    st["front_ready"] = True
    return found, found_edges, {"own_found": claims, "form": FORMS[form], "part": part,
                                "counted": "device" if on_device else "parts", **info}


def _merged_size(st: dict, parts: LevelParts, meta: np.ndarray) -> tuple[int, int]:
    """The merged claims' vertices and out-degrees from the gathered sizes (``meta``
    rows ``[size, form, first, staged, claims, their out-degrees, displacement]``): one
    rank's claims where only one rank claimed any (its own are distinct), the union of
    short lists on the host where the parts came through it; else ``(-1, -1)``: they are
    counted on the device."""
    host, sizes, claims, displs = parts.host, meta[:, 0], meta[:, 4], meta[:, 6]
    if int((claims > 0).sum()) <= 1:
        r = int(np.argmax(claims))
        return int(claims[r]), int(meta[r, 5])
    if (parts.peers is None and (meta[:, 1] == AS_LIST).all()
            and int(claims.sum()) <= HOST_UNION):
        ids = np.unique(np.concatenate([host[d:d + c] for c, d in zip(sizes, displs)]))
        return int(ids.size), int(st["outdeg"][ids].sum())
    return -1, -1


def _finish(app, engine: Engine, st: dict, where: str) -> dict:
    """Parents of the vertices other ranks claimed (after any top-down level; alike on
    every rank, whose levels' directions agree): each rank sends the (vertex, parent) pairs
    it holds for other ranks' vertices to their owners (:func:`_hand_over`). Then every
    side holds its own rows. Returns the step's record."""
    parts, comm = st["parts"], engine.comm
    out = {"own_found": 0, "form": "pairs", "part": 0, "bytes_sent": 0, "bytes_received": 0,
           "exchange_s": 0.0, "mpi_s": 0.0, "path": None}
    if where == "marks":
        _move(st, True, app.sync_vectors)
    if st["top_down"]:
        out = _hand_over(engine, st, parts, comm)
    _move(st, False, app.sync_vectors)
    return out


def _hand_over(engine: Engine, st: dict, parts: LevelParts, comm) -> dict:
    """The parents' hand-over of :func:`_finish` (collective): pairs found on the device,
    grouped by owner (one launch per other rank, in rank order), every rank's counts
    gathered, then the pairs moved GPU to GPU where the level merges' regions hold them
    (:func:`_pairs_gpu`), else through the host (:func:`_pairs_host`)."""
    push = st["push_role"]
    t0, m0 = time.perf_counter(), comm.mpi_seconds
    parts.wait()
    side, bounds = engine.pair.side(push), engine.partition.bounds
    cap = max(int(st["claims_total"]), 1)  # every pair is one of this rank's claims
    dev = parts.device_words(push, 2 * cap, "pairs")
    parent = engine.buffer("parent", push)
    cl().enqueue_fill_buffer(side.queue, parts.counts, np.zeros(1, np.int32), 0,
                             4 * (comm.size + 1))
    for s in range(comm.size):
        lo, hi = int(bounds[s]), int(bounds[s + 1])
        if s != comm.rank and hi > lo:
            _launch(engine, push, "claimed_pairs", hi - lo,
                    (np.int32(lo), np.int32(hi), np.int32(st["root"]), parent, parts.counts,
                     np.int32(1 + s), dev, np.int32(cap)))
    counts = np.zeros(comm.size + 1, np.int32)
    engine.read_buffer(push, counts, parts.counts)
    engine.drain()
    words = 2 * comm.allgather_ints(counts[1:])  # [sender, owner]: the words of pairs
    mine, got = int(words[comm.rank].sum()), int(words[:, comm.rank].sum())
    px = parts.peers
    on_gpu = (px is not None and side.context == px.side.context  # alike on every rank
              and all(4 * int(w) <= h for w, h in zip(words.sum(axis=1), px.halves)))
    src = (_pairs_gpu if on_gpu else _pairs_host)(parts, push, dev, words)
    if got:
        _launch(engine, push, "set_parents", got // 2,
                (np.int32(got // 2), src, np.int32(0), parent))
    lo, hi = (int(b) for b in bounds[comm.rank:comm.rank + 2])
    if hi > lo:  # the root's children: their parent is the root (no pair was sent)
        _launch(engine, push, "root_children", hi - lo,
                (np.int32(lo), np.int32(hi), np.int32(st["root"]),
                 engine.buffer("level", push), parent))
    engine.stats["routed"] += mine // 2
    engine.stats["routed_bytes"] += 4 * mine
    seconds = time.perf_counter() - t0
    engine.stats["merge_seconds"] += seconds
    engine.stats["merge_bytes_received"] += 4 * got
    return {"own_found": mine // 2, "form": "pairs", "part": mine, "bytes_sent": 4 * mine,
            "bytes_received": 4 * got, "exchange_s": seconds, "path": "gpu" if on_gpu
            else "host", "mpi_s": comm.mpi_seconds - m0}


def _pairs_host(parts: LevelParts, push: str, dev, words: np.ndarray):
    """The hand-over's pairs through the host: this rank's read from ``dev`` (one wait),
    an ``alltoallv``, the pairs it receives written to the push side; their buffer."""
    comm, me = parts.comm, parts.comm.rank
    send, recv = words[me], words[:, me]
    mine, got = int(send.sum()), int(recv.sum())
    host = parts.host_words(mine + got)
    parts.read(push, [(host[:mine], dev, 0)])
    comm.alltoallv(host[:mine], send, recv, out=host[mine:mine + got])
    if not got:
        return None
    dev = parts.device_words(push, got, "pairs")
    parts.pending.append(cl().enqueue_copy(parts.engine.pair.side(push).queue, dev,
                                           host[mine:mine + got], is_blocking=False))
    return dev


def _pairs_gpu(parts: LevelParts, push: str, dev, words: np.ndarray):
    """The hand-over's pairs GPU to GPU, through the level merges' regions (every rank's
    pairs fit a half of its send region): this rank's copied into its send region on the
    device, each owner's pulled by the owner's GPU (grouped by owner in rank order, so
    each sender's part for an owner starts at the words it sends to the owners before);
    the receive region, where the pairs lie from word 0."""
    px, me = parts.peers, parts.comm.rank
    parts.post(int(words[me].sum()), (dev, 0))
    before = np.cumsum(words, axis=1) - words  # [sender, owner]: words ahead of the owner's
    pulls, at = [], 0
    for r in range(parts.comm.size):
        if r != me and words[r, me]:
            pulls.append((r, 4 * int(before[r, me]), 4 * at, 4 * int(words[r, me])))
            at += int(words[r, me])
    px.move(pulls)
    return px.recv
