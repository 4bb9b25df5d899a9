"""Connected components across the ranks of a distributed run (DESIGN.md §3, "mpi").

Each rank owns a contiguous range ``lo .. hi`` of the symmetrised graph's rows. Instead of
exchanging every label every round (FastSV over the ranks), a rank:

1. runs Afforest (:mod:`finepar.apps.afforest`) on its own subgraph: its rows, the edges
   whose both ends it owns; no communication. Every local component has its root (its
   smallest vertex), and the sample names the rank's giant component;
2. learns, for each ghost (a vertex of another rank that its cross edges reach), one bit:
   whether the owner's giant component holds it (the owners send bitmaps in the order
   asked once at setup, n_ghosts / 32 words: where the run's exchanges go GPU to GPU,
   :mod:`finepar.mpi.peers`, each owner's kernel writes them into its send region and
   each asker's GPU copies its words out, one wait and one barrier; else a read, one
   ``MPI_Alltoallv`` and a write);
3. hooks its cross edges on the device: an edge from a root outside the giant to an
   owner's giant attaches the root to that giant (two giants met at one root are
   linked; each giant keeps its smallest attached root); an edge between two roots
   outside their giants is a record ``(root, vertex, ghost)``; a sample of the giant's
   cross edges (all of them where the sample finds none) links giants directly; the
   count of records and the first :data:`PEEK_RECORDS` of them come back in one wait;
4. gathers every rank's giant root, links, smallest attached roots and records on every
   rank (one ``MPI_Allgatherv``) and solves the small graph of giants and recorded roots
   on the device, the same on every rank (:class:`GatheredSolve`: Afforest's links over
   global vertex ids; the host touches only the P-sized heads): each component's label
   is its smallest vertex;
5. labels every vertex by its root: the giant's label, a recorded root's, an attached
   giant's, or the root itself (a local component without cross edges is whole).

What crosses the ranks is a bit per ghost and a record per cross edge between two small
components, not a label per vertex per round: on Graph500 graphs, where each rank's
giant holds most of its edges, the records are a few percent of the cross edges. On a
graph without giants the records approach the cross edges (still one gather).

The code reaches the ranks through the engine's communicator (``engine.comm``, a
:class:`finepar.mpi.comm.Communicator`) and row partition (``engine.partition``):
this module runs under :class:`finepar.mpi.engine.DistEngine` without importing MPI.
"""

from __future__ import annotations

import time

import numpy as np

from ..device import PinnedHost, cl, filled, read_staged
from ..engine.reads import read_buffers
from ..engine.timing import event_seconds
from ..graph import INT32_MAX, Graph, pattern_values
from .afforest import ROUNDS, Afforest
from ..engine.backref import EngineRef

#: Most ranks (a root's attached giants are the bits of a 32-bit word, bit 31 a flag).
MAX_RANKS = 31
#: Cross edges sampled per owner to find a direct link between two giants.
PROBES = 4096
#: Records a rank's buffer holds at first (at most its cross edges; at least a sixteenth
#: of them); a run that records more grows it and hooks again.
MIN_RECORDS = 1 << 16
#: Records read with the hooking's count in one wait (page-locked, 16 bytes each); a run
#: that records more reads the rest in a second wait.
PEEK_RECORDS = 1 << 15
#: Work-items of the records' pass (``ranks_records``, a grid-stride loop over the count
#: it reads on the device).
RECORD_ITEMS = 1 << 14
#: The host's phases of a run, each from one wait to the next (``stats['host_s']``).
PHASES = ("afforest", "giant_bits", "bits_exchange", "hook", "records", "gather", "solve",
          "label")
#: How the giant bits crossed (``stats['bits_path']``), for the report.
BITS_PATHS = {"gpu": "GPU to GPU", "emulated": "GPU to GPU, emulated", "host": "through the host"}
#: The programs (afforest.cl's join first: ranks.cl's solve calls it).
SOURCES = ("apps/cc/afforest.cl", "apps/cc/ranks.cl")


def across_ranks(engine) -> bool:
    """Whether ``engine`` is a rank of a distributed run (it carries a communicator and
    a row partition) that :class:`RankComponents` can run on (at most :data:`MAX_RANKS`
    ranks, one block of rows per vertex)."""
    comm, part = getattr(engine, "comm", None), getattr(engine, "partition", None)
    return comm is not None and part is not None and part.blocks == 1 and \
        comm.size <= MAX_RANKS


def split_rows(matrix: Graph, lo: int, hi: int):
    """A rank's rows ``lo .. hi`` of a symmetric ``matrix`` cut into its own subgraph and
    its cross edges.

    Returns
    -------
    local : Graph
        ``hi - lo`` vertices (local ids ``v - lo``): the entries whose both ends are in
        the range; symmetric.
    rows : ndarray of int64, shape (hi - lo,)
        Each row's cross entries (columns outside the range).
    cross : ndarray of int32
        The cross entries' columns (global ids), row by row.
    """
    p0, p1 = int(matrix.indptr[lo]), int(matrix.indptr[hi])
    ptr = np.asarray(matrix.indptr[lo:hi + 1], dtype=np.int64) - p0
    idx = matrix.indices[p0:p1]
    inside = (idx >= lo) & (idx < hi)
    deg = np.diff(ptr)
    inner = np.zeros(deg.size, np.int64)
    full = np.flatnonzero(deg)  # reduceat over rows with entries: each sums to its end
    if full.size:
        inner[full] = np.add.reduceat(inside, ptr[full], dtype=np.int64)
    local_idx = idx[inside]
    local_idx -= np.int32(lo)
    cross = idx[~inside]
    del inside
    lptr = np.concatenate(([0], np.cumsum(inner)))
    lptr = lptr.astype(np.int64 if lptr[-1] > INT32_MAX else np.int32)
    local = Graph(lptr, local_idx, pattern_values(local_idx.size), name="rank-subgraph",
                  pattern=True, symmetric=True)
    return local, deg - inner, cross


class CrossEdges:
    """A rank's cross edges as the device kernels read them, and who asks whom for
    which bits (collective: built once per engine).

    Parameters
    ----------
    comm : Communicator
    bounds : ndarray of int64, shape (P + 1,)
    xcount : ndarray of int64, shape (k,)
        Cross entries of each of the rank's rows.
    cross : ndarray of int32
        Their columns (global ids), row by row.

    Attributes
    ----------
    brows : ndarray of int32
        Boundary rows (local ids): rows with a cross entry.
    xptr : ndarray of int32 or int64, shape (brows.size + 1,)
    xcol : ndarray of int32
        Each cross entry's bit position: owner ``o``'s ghosts, in id order, are the bits
        from ``owner_start[o]`` (a multiple of 32).
    owner_start : ndarray of int32, shape (P + 1,)
    ghosts : ndarray of int64
        The ghost of each bit position (-1 for padding).
    asked : ndarray of int32
        The local ids each asker asked for, each asker's run padded to 32 with -1.
    send_words, recv_words : ndarray of int64, shape (P,)
        Words of bits sent to / received from each rank per run.
    probe_u, probe_b : ndarray of int32
        A sample of the cross entries (row, bit position).
    owners_reached : ndarray of bool, shape (P,)
        The owners this rank has cross edges to.
    counts : dict
        ``boundary_rows``, ``cross_edges``, ``ghosts``, ``bit_words_sent``,
        ``bit_words_received``, ``probe_entries`` (the sample's size).
    """

    def __init__(self, comm, bounds: np.ndarray, xcount: np.ndarray, cross: np.ndarray):
        P, rank = comm.size, comm.rank
        lo = int(bounds[rank])
        n = int(bounds[-1])
        seen = np.zeros(n, dtype=bool)  # a mask, not a sort of every cross entry
        seen[cross] = True
        ghosts = np.flatnonzero(seen).astype(np.int32)
        del seen
        per = np.bincount(np.searchsorted(bounds, ghosts, side="right") - 1,
                          minlength=P).astype(np.int64)
        self.owners_reached = per > 0
        self.recv_words = -(-per // 32)
        self.owner_start = (32 * np.concatenate(([0], np.cumsum(self.recv_words)))).astype(np.int32)
        first = np.concatenate(([0], np.cumsum(per)))
        pos = np.arange(ghosts.size, dtype=np.int64)
        pos += np.repeat(self.owner_start[:-1] - first[:-1], per)
        self.ghosts = np.full(int(self.owner_start[-1]), -1, dtype=np.int64)
        self.ghosts[pos] = ghosts
        at = np.zeros(n, dtype=np.int32)
        at[ghosts] = pos
        self.xcol = at[cross]
        del at
        self.brows = np.flatnonzero(xcount).astype(np.int32)
        xptr = np.concatenate(([0], np.cumsum(xcount[self.brows])))
        self.xptr = xptr.astype(np.int64 if xptr[-1] > INT32_MAX else np.int32)
        self._ask(comm, ghosts, per, lo)
        self._probes(P)
        self.counts = {"boundary_rows": int(self.brows.size), "cross_edges": int(self.xcol.size),
                       "ghosts": int(ghosts.size),
                       "bit_words_sent": int(self.send_words.sum()),
                       "bit_words_received": int(self.recv_words.sum()),
                       "probe_entries": int(self.probe_u.size)}

    def _ask(self, comm, ghosts: np.ndarray, per: np.ndarray, lo: int) -> None:
        """Send each owner the ghosts this rank reads; keep what the others asked."""
        asks = comm.alltoall_counts(per)
        asked = comm.alltoallv(ghosts, per, asks) - np.int32(lo)
        self.send_words = -(-asks // 32)
        out = np.full(32 * int(self.send_words.sum()), -1, dtype=np.int32)
        starts = np.concatenate(([0], np.cumsum(32 * self.send_words)[:-1]))
        pos = np.arange(asked.size, dtype=np.int64)
        pos += np.repeat(starts - np.concatenate(([0], np.cumsum(asks)[:-1])), asks)
        out[pos] = asked
        self.asked = out

    def _probes(self, P: int) -> None:
        """:data:`PROBES` cross entries per other rank, evenly spaced over all of them
        (an owner the sample misses is looked for in every giant edge: a run's
        ``ranks_giant_rows``), with no pass over the cross entries."""
        total = self.xcol.size
        ents = np.unique(np.linspace(0, total - 1, min(total, PROBES * max(P - 1, 1)))
                         .astype(np.int64)) if total else np.zeros(0, np.int64)
        row = np.searchsorted(self.xptr, ents, side="right") - 1
        self.probe_u = self.brows[row].astype(np.int32)
        self.probe_b = self.xcol[ents].astype(np.int32)

    def describe(self) -> dict:
        """The counts of :attr:`counts` (made once: a run reads no ghost array)."""
        return dict(self.counts)


class RankComponents:
    """Connected components over the ranks of a distributed engine (see the module's
    description); built once per engine (collective).

    Parameters
    ----------
    engine : DistEngine
        Over the rank's rows of the symmetrised graph (:func:`across_ranks`).
    role : str
        The device that runs Afforest and the hooking (it holds the rank's subgraph and
        cross edges).

    Attributes
    ----------
    afforest : Afforest
        On the rank's subgraph (local ids), listing for its final hooking only the
        vertices with an edge left after the sampling rounds.
    edges : CrossEdges
    stats : dict
        The last run's counts: ``records`` (this rank's), ``records_gathered`` (every
        rank's), ``giant_root`` (global id), ``probe_found`` (the sample linked every
        reached owner's giant), ``records_to`` (this rank's records by their ghosts' ranks),
        ``rounds`` (collectives that moved data), ``bytes_sent``,
        ``seconds`` (those collectives' wall time), ``hooks`` (hooking passes: 2 where
        the records outgrew their buffer), ``records_grown`` (times the buffer grew, over
        every run), ``host_s`` (the host's wall seconds of each of :data:`PHASES`, from
        one wait to the next), ``bits_path`` (how the giant bits crossed: ``gpu``,
        ``emulated`` or ``host``), ``waits`` (the run's host waits for the device), with
        :meth:`CrossEdges.describe`'s; :meth:`finished` adds what needs the run's end.
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine, role: str):
        comm, part = engine.comm, engine.partition
        self.engine, self.role, self.comm = engine, role, comm
        self.P, self.me = comm.size, comm.rank
        self.lo, self.hi = int(part.bounds[self.me]), int(part.bounds[self.me + 1])
        self.local, xcount, cross = split_rows(engine.matrix, self.lo, self.hi)
        self.afforest = Afforest(engine, role, self.local)
        self.k = self.local.n
        deg = np.diff(self.local.indptr)
        self.shape = {"local_entries": int(self.local.nnz),
                      "largest_degree": int(deg.max()) if deg.size else 0}
        del deg
        self.edges = CrossEdges(comm, np.asarray(part.bounds), xcount, cross)
        del xcount, cross
        self.side = engine.pair.side(role)
        self._buffers()
        self.stats: dict = {}
        self._events: list = []

    def _buffers(self) -> None:
        e, s, P = self.edges, self.side, self.P
        up = self.engine.scratch
        self.buf = {name: up(self.role, np.ascontiguousarray(a)) for name, a in (
            ("brows", e.brows), ("xptr", e.xptr), ("xcol", e.xcol), ("asked", e.asked),
            ("ghosts", e.ghosts.astype(np.int32)),
            ("probe_u", e.probe_u), ("probe_b", e.probe_b), ("owner_start", e.owner_start))}
        self.bits_path, self.pulls = self._bits_path()
        if self.bits_path != "host":  # the askers' GPUs copy the bits out of the send region
            self.buf["send"], self.buf["bits"] = self.px.send, self.px.recv
        else:  # read, sent through MPI from page-locked words (DMAs), written back
            self.buf["send"] = filled(s, max(int(e.send_words.sum()), 1), np.uint32)
            self.buf["bits"] = filled(s, max(int(e.recv_words.sum()), 1), np.uint32)
            self._pinned = [PinnedHost(s, np.zeros(0, np.uint32), size=int(w.sum()))
                            for w in (e.send_words, e.recv_words)]
            self.host_send, self.host_bits = (p.host for p in self._pinned)
        self.buf["mask"] = filled(s, self.k, np.uint32)
        self.buf["state"] = filled(s, 2 + 3 * P, np.int32)
        self.buf["glabel"] = filled(s, P, np.int32)
        self.buf["labels"] = filled(s, self.k, np.int32)
        self.buf["touched"] = filled(s, 2, np.uint64)
        self.cap = int(min(e.xcol.size, max(MIN_RECORDS, e.xcol.size // 16))) or 1
        self._record_buffers()
        self.grown = 0
        self._gather = PinnedHost(s, np.zeros(0, np.int32), size=P * (2 + 3 * P))
        self.host_state = np.zeros(2 + 3 * P, np.int32)
        self.state0 = np.concatenate(([0], np.zeros(P), np.full(P, INT32_MAX), [0],
                                      np.zeros(P))).astype(np.int32)
        wide = e.xptr.dtype == np.int64
        prg = self.engine.pair.program(s, SOURCES, {"OFFSET_T": "long" if wide else "int"})
        self.kernels = {k: cl().Kernel(prg, f"ranks_{k}") for k in
                        ("giant_bits", "hook", "probe", "giant_rows", "records", "label")}
        self.solver = GatheredSolve(self.engine, self.role, prg,
                                    int(self.engine.partition.bounds[-1]), P) if P > 1 else None

    def _bits_path(self) -> tuple[str, list]:
        """Where the giant bits cross (collective): ``gpu`` (or ``emulated``) where the
        run's exchanges go GPU to GPU (:meth:`~finepar.mpi.engine.DistEngine.peer_exchange`)
        and every rank hooks on that GPU's context, each asker then copying its words out
        of each owner's send region; else ``host`` (a read, ``MPI_Alltoallv`` and a
        write). With the path, the pulls: ``(owner, byte in its send half, byte in the
        receive region, bytes)``."""
        self.px = None
        if self.P == 1:
            return "host", []
        e, gpu = self.edges, self.engine.pair.side("gpu")
        px = self.engine.peer_exchange(gpu, 4 * int(e.send_words.sum()),
                                       4 * max(int(e.recv_words.sum()), 1), "cc giant bits")
        near = px is not None and self.side.context == px.side.context
        every = self.comm.allgather((near, e.send_words.tolist()))
        if not all(ok for ok, _ in every):
            return "host", []
        self.px = px
        pulls = [(o, 4 * int(sum(words[:self.me])), 4 * int(e.owner_start[o] // 32),
                  4 * int(e.recv_words[o]))
                 for o, (_, words) in enumerate(every) if o != self.me and e.recv_words[o]]
        return self.engine.merge_path, pulls

    def _record_buffers(self) -> None:
        """The records (``cap`` of them), and the page-locked host words their first
        :data:`PEEK_RECORDS` are read into with their count."""
        self.buf["records"] = filled(self.side, 4 * self.cap, np.int32)
        self._peek = PinnedHost(self.side, np.zeros(0, np.int32),
                                size=4 * min(self.cap, PEEK_RECORDS))

    def _launch(self, name: str, size: int, args: tuple) -> None:
        self.engine.launch(self.role, self.kernels[name], size, args, kind=f"cc-ranks-{name}",
                           wg=256, wait=False)

    def _lap(self, phase: str) -> None:
        """The host's wall seconds since the last lap, as ``phase``'s."""
        now = time.perf_counter()
        self.stats["host_s"][phase] = self.stats["host_s"].get(phase, 0.0) + now - self._t
        self._t = now

    # ------------------------------------------------------------ the run
    def run(self) -> list[dict]:
        """Label every vertex of the rank (collective); returns the phases for the trace.
        The labels stay on the device (:meth:`labels`)."""
        self._t = time.perf_counter()
        syncs = self.engine.host_syncs
        before = {id(rec) for rec, _, _ in self.engine.pending}  # launches not this run's
        self.stats = {**self.edges.describe(), "records": 0, "records_gathered": 0,
                      "rounds": 0, "bytes_sent": 0, "seconds": 0.0, "probe_found": True,
                      "hooks": 0, "records_grown": self.grown, "host_s": {},
                      "bits_path": self.bits_path}
        trace = self.afforest.run(ROUNDS)
        self._lap("afforest")
        giant = self.afforest.giant  # its root, found on the device: no wait
        q = self.side.queue
        cl().enqueue_fill_buffer(q, self.buf["mask"], np.zeros(1, np.uint32), 0, 4 * self.k)
        cl().enqueue_fill_buffer(q, self.buf["touched"], np.zeros(1, np.uint64), 0, 16)
        if self.P > 1:
            self._across(giant)  # the giants' labels on the device
        else:  # one rank: no label comes, the giant's root is its label
            cl().enqueue_fill_buffer(q, self.buf["glabel"], np.full(1, -1, np.int32), 0, 4)
        b = self.buf
        self._launch("label", self.k, (np.int32(self.k), self.afforest.comp, giant, b["mask"],
                                       b["glabel"], np.int32(self.me), np.int32(self.lo),
                                       b["labels"]))
        self._events = [(rec.kind, evs[self.role]) for rec, evs, _ in self.engine.pending
                        if id(rec) not in before and self.role in evs]
        self._lap("label")
        self.stats["waits"] = self.engine.host_syncs - syncs
        trace.append({"phase": "ranks", **{k: v for k, v in self.stats.items()
                                           if k in ("records_gathered", "rounds")}})
        return trace

    def _write(self, buf, array: np.ndarray) -> None:
        """A non-blocking write: the queue is in order, and ``array`` stays as it is until
        the run's next wait (the caller keeps it)."""
        cl().enqueue_copy(self.side.queue, buf, array, is_blocking=False)

    def finished(self) -> dict:
        """:attr:`stats` with what needs the last run's end (collective; after its labels
        are read): ``kernel_s``, every kernel's seconds by kind (summed over its launches,
        from their profiling events), the cross entries the kernels read,
        ``hook_entries`` (the boundary rows' outside the giant) and ``giant_row_entries``
        (the giant's rows', where the sample missed a giant link), and ``per_rank``: every
        rank's ``kernel_s``, ``host_s``, ``hook_entries``, ``listed`` (the vertices its
        Afforest's final hooking listed), ``local_entries`` and ``largest_degree`` (its
        subgraph's), in rank order."""
        kernel_s: dict = {}
        for kind, evs in self._events:
            kernel_s[kind] = kernel_s.get(kind, 0.0) + event_seconds(evs)[0]
        touched = np.zeros(2, np.uint64)
        self.engine.read_buffer(self.role, touched, self.buf["touched"])
        self.stats.update(kernel_s=kernel_s, hook_entries=int(touched[0]),
                          giant_row_entries=int(touched[1]))
        self.stats["per_rank"] = self.comm.allgather(
            {**{k: self.stats[k] for k in ("kernel_s", "host_s", "hook_entries")},
             "listed": self.afforest.hooked(), **self.shape})
        return self.stats

    def _across(self, giant) -> None:
        """Steps 2-4: the giant bits, the hooking, the gather and its solve on the device
        (each giant's label into ``glabel``, the recorded roots' into ``mask``)."""
        self._exchange_bits(giant)
        count = self._hook(giant)
        mine = self._part(count)
        sent = mine[1 + 2 * self.P:1 + 3 * self.P]
        t0 = time.perf_counter()
        sizes = self.comm.allgatherv(np.array([mine.size], np.int32),
                                     counts=np.ones(self.P, np.int64))
        every = self.comm.allgatherv(mine, counts=sizes.astype(np.int64),
                                     out=self._gathered(int(sizes.sum())))
        self._count(time.perf_counter() - t0, 4 * (1 + mine.size) * (self.P - 1), rounds=2)
        self._lap("gather")
        self.stats["records"] = int(count)
        self.stats["records_to"] = sent.tolist()
        self.stats["records_gathered"] = self.solver.enqueue(
            np.split(every, np.cumsum(sizes)[:-1]), self.lo, self.hi, self.buf["mask"],
            self.buf["glabel"])
        self.stats["giant_root"] = int(mine[0])
        self._lap("solve")

    def _gathered(self, words: int) -> np.ndarray:
        """Page-locked host words for every rank's part of the gather (grown by doubling):
        the solve's writes of the records from there are DMAs."""
        if self._gather.host.size < words:
            self._gather = PinnedHost(self.side, np.zeros(0, np.int32),
                                      size=max(words, 2 * self._gather.host.size))
        return self._gather.host[:words]

    def _count(self, seconds: float, nbytes: int, rounds: int) -> None:
        """Record a collective's cost here and in the engine's exchange counts."""
        self.stats["seconds"] += seconds
        self.stats["bytes_sent"] += int(nbytes)
        self.stats["rounds"] += rounds
        st = getattr(self.engine, "stats", None)
        if isinstance(st, dict) and "gathers" in st:
            st["gathers"] += rounds
            st["gather_bytes"] += int(nbytes)
            st["gather_seconds"] += seconds

    def _exchange_bits(self, giant) -> None:
        """Step 2: each owner's giant bits of the ghosts each rank asked for, into
        ``bits``: GPU to GPU where :attr:`bits_path` allows (one wait for the bits'
        kernel, then the copies), else through the host."""
        e, b = self.edges, self.buf
        words = int(e.send_words.sum())
        at = 0 if self.px is None else self.px.at // 4
        if words:
            self._launch("giant_bits", words, (np.int32(words), b["asked"], self.afforest.comp,
                                               giant, b["send"], np.int32(at)))
        if self.px is not None:
            self.side.queue.finish()  # the peers copy the bits once every rank's are done
            self.engine.host_syncs += 1
            self._lap("giant_bits")
            t0 = time.perf_counter()
            self.px.move(self.pulls)
            self._count(time.perf_counter() - t0, 4 * words, rounds=1)
            self._lap("bits_exchange")
            return
        if words:
            self.engine.read_buffer(self.role, self.host_send, b["send"], count=words)
        self._lap("giant_bits")
        t0 = time.perf_counter()
        self.comm.alltoallv(self.host_send[:words], e.send_words, e.recv_words,
                            out=self.host_bits[:int(e.recv_words.sum())])
        self._count(time.perf_counter() - t0, 4 * words, rounds=1)
        if e.recv_words.sum():
            self._write(b["bits"], self.host_bits)
        self._lap("bits_exchange")

    def _hook(self, giant) -> int:
        """Step 3 on the device; the records' count (the state read back)."""
        e, b, P = self.edges, self.buf, np.int32(self.P)
        rows = np.int32(e.brows.size)
        common = (b["bits"], b["owner_start"], P, self.afforest.comp, giant)
        while True:
            self._write(b["state"], self.state0)
            cl().enqueue_fill_buffer(self.side.queue, b["touched"], np.zeros(1, np.uint64), 0, 8)
            self._launch("hook", max(int(rows), 1), (
                rows, b["brows"], b["xptr"], b["xcol"], *common, np.int32(self.lo), b["mask"],
                b["state"], b["records"], np.int32(self.cap), b["touched"]))
            if e.probe_u.size:
                self._launch("probe", e.probe_u.size, (
                    np.int32(e.probe_u.size), b["probe_u"], b["probe_b"], *common,
                    np.int32(self.me), b["state"]))
            self._launch("records", min(self.cap, RECORD_ITEMS), (
                np.int32(self.cap), b["records"], b["mask"], b["ghosts"], b["owner_start"], P,
                np.int32(self.lo), b["state"]))
            peek = self._peek.host[:4 * min(self.cap, PEEK_RECORDS)]
            read_buffers(self.engine, self.role, ((self.host_state, b["state"]),
                                                  (peek, b["records"])))
            self.stats["hooks"] += 1
            count = int(self.host_state[0])
            if count <= self.cap:
                break
            self.cap = count  # grow and hook again (the masks too: they are ORs, idempotent)
            self.grown += 1
            self.stats["records_grown"] = self.grown
            self._record_buffers()
        links = self.host_state[1:1 + self.P].view(np.uint32)
        want = [o for o in range(self.P) if o != self.me and e.owners_reached[o]
                and not (int(links[o]) >> self.me) & 1]
        if want:  # the sample found no direct link to these giants: every giant edge
            self.stats["probe_found"] = False
            self._launch("giant_rows", max(int(rows), 1), (
                rows, b["brows"], b["xptr"], b["xcol"], *common, np.int32(self.me),
                np.uint32(sum(1 << o for o in want)), b["state"], b["touched"]))
            self.engine.read_buffer(self.role, self.host_state, b["state"])
        self._lap("hook")
        return count

    def _part(self, count: int) -> np.ndarray:
        """This rank's part of the gather (int32): its giant's root (a global id),
        ``links`` (P), ``gmin`` (P), its records' count by their ghosts' ranks (P), then
        its ``count`` records (root, vertex, ghost, root's mask), made on the device
        (``ranks_records``): the first :data:`PEEK_RECORDS` as the hooking's wait read
        them, any more read now."""
        P, hs = self.P, self.host_state
        mine = np.empty(1 + 3 * P + 4 * count, np.int32)
        mine[0] = hs[1 + 2 * P] + self.lo
        mine[1:1 + 2 * P] = hs[1:1 + 2 * P]
        mine[1 + 2 * P:1 + 3 * P] = hs[2 + 2 * P:2 + 3 * P]
        flat = mine[1 + 3 * P:]
        have = min(count, self._peek.host.size // 4)
        flat[:4 * have] = self._peek.host[:4 * have]
        if count > have:
            cl().enqueue_copy(self.side.queue, flat[4 * have:], self.buf["records"],
                              src_offset=16 * have, is_blocking=True)
            self.engine.host_syncs += 1
        self._lap("records")
        return mine

    # ------------------------------------------------------------ the answer
    def labels(self) -> np.ndarray:
        """Every vertex's label, whole on every rank (int32, shape (n,); collective)."""
        mine = np.empty(self.k, np.int32)
        read_staged(self.side, mine, self.buf["labels"])
        counts = np.diff(np.asarray(self.engine.partition.bounds)).astype(np.int64)
        return self.comm.allgatherv(mine, counts=counts)



class GatheredSolve:
    """Step 4 on the device, the same on every rank: the components of the graph of the
    ranks' giants and recorded roots, from the gathered parts (DESIGN.md §3, "mpi").

    A forest over global vertex ids (``parent``, n int32 entries, allocated once; a run
    sets and reads only the records' vertices, the giants' roots and their smallest
    attached roots) hooked by Afforest's links (``ranks_solve_*`` in
    ``opencl/apps/cc/ranks.cl``): a record (a, u, g, giants) joins u with g, whose
    parent is its root from the owner's record of the same edge, and a with its giants;
    each giant joins its smallest attached root and the giants it was linked with. A
    tree's root is its smallest vertex: the label. The host touches only the P-sized
    heads; no pass over the records but one concatenation.

    Parameters
    ----------
    engine : Engine
        The rank's engine (its launches are counted there).
    role : str
        The device holding ``mask`` and ``glabel``.
    program : pyopencl.Program
        Built from :data:`SOURCES`.
    n : int
        Vertices of the whole graph (global ids).
    P : int
        Ranks, at most :data:`MAX_RANKS`.
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine, role: str, program, n: int, P: int):
        self.engine, self.role, self.P = engine, role, P
        self.side = engine.pair.side(role)
        self.parent = filled(self.side, max(n, 1), np.int32)
        self.kernels = {k: cl().Kernel(program, f"ranks_solve_{k}")
                        for k in ("init", "link", "label")}
        self.pairs = filled(self.side, 2 * (2 * P + P * P), np.int32)
        self.groots = filled(self.side, P, np.int32)
        self.cap = 4
        self.rec = filled(self.side, self.cap, np.int32)
        self._keep: tuple = ()

    def _write(self, buf, array: np.ndarray, at: int = 0) -> None:
        """A non-blocking write at byte ``at`` (``array`` is kept until the next run)."""
        if array.size:
            cl().enqueue_copy(self.side.queue, buf, array, dst_offset=at, is_blocking=False)

    def heads(self, parts: list) -> tuple[np.ndarray, np.ndarray]:
        """The giants' roots (int32, shape (P,)) and the pairs to join (int32, shape
        (pairs, 2)): each giant's root with itself, with its smallest attached root
        (where one attached) and with each giant a rank saw linked with it (word o of a
        rank's ``links``: bit b, giant b linked with giant o).

        Raises
        ------
        RuntimeError
            The records of rank r with ghosts on rank o do not number those of o with
            ghosts on r (a cross edge between two small components recorded on one side).
        """
        P = self.P
        head = np.stack([p[:1 + 3 * P] for p in parts]).astype(np.int64)
        sent = head[:, 1 + 2 * P:]
        if np.any(sent != sent.T):
            raise RuntimeError("a cross edge between two small components was recorded on "
                               "one side only")
        groots = head[:, 0]
        gmin = head[:, 1 + P:1 + 2 * P].min(axis=0)
        links = np.bitwise_or.reduce(head[:, 1:1 + P], axis=0).astype(np.uint32)
        o, b = np.nonzero((links[:, None] >> np.arange(P, dtype=np.uint32)) & 1)
        att = np.flatnonzero(gmin < INT32_MAX)
        pairs = np.concatenate((np.stack((groots, groots), 1), np.stack((groots[att], gmin[att]), 1),
                                np.stack((groots[o], groots[b]), 1))).astype(np.int32)
        return groots.astype(np.int32), pairs

    def enqueue(self, parts: list, lo: int, hi: int, mask, glabel) -> int:
        """Enqueue the solve of the gathered ``parts``; returns the records gathered.

        Parameters
        ----------
        parts : list of ndarray of int32
            Each rank's part: its giant's root, ``links`` (P), ``gmin`` (P), its records'
            count by their ghosts' ranks (P), then its records ``(root, vertex, ghost,
            root's giants)`` (global ids), flattened.
        lo, hi : int
            This rank's vertices.
        mask : pyopencl.Buffer of uint32, shape (hi - lo,)
            Each recorded root of this rank gets its label there, with bit 31 set.
        glabel : pyopencl.Buffer of int32, shape (P,)
            Each rank's giant's label.
        """
        groots, pairs = self.heads(parts)
        recs = [p[1 + 3 * self.P:] for p in parts]
        words = sum(r.size for r in recs)
        count = words // 4
        self._keep = (groots, pairs, recs)  # the writes read them
        if words > self.cap:  # the records' buffer grows by doubling
            self.cap = max(2 * self.cap, words)
            self.rec = filled(self.side, self.cap, np.int32)
        at = 0
        for r in recs:  # each rank's records where they lie (no concatenation)
            self._write(self.rec, r, 4 * at)
            at += r.size
        self._write(self.pairs, pairs)
        self._write(self.groots, groots)
        size = max(count, len(pairs))
        common = (np.int32(count), self.rec)
        self._launch("init", size, (*common, np.int32(len(pairs)), self.pairs, self.parent))
        self._launch("link", size, (*common, np.int32(len(pairs)), self.pairs, self.groots,
                                    self.parent))
        self._launch("label", size, (*common, np.int32(self.P), self.groots, self.parent,
                                     np.int32(lo), np.int32(hi), mask, glabel))
        return count

    def _launch(self, name: str, size: int, args: tuple) -> None:
        self.engine.launch(self.role, self.kernels[name], size, args,
                           kind=f"cc-ranks-solve_{name}", wg=256, wait=False)
