"""Whether two ranks' GPUs can copy OpenCL buffers to each other directly (issue 32: every
exchange between ranks crosses host memory twice today, because NVIDIA's OpenCL has no
peer copy and reaches its pinned rate only from its own buffers; DESIGN.md).

The route probed: device memory allocated by CUDA's driver API (``cuMemCreate``, exportable
as a POSIX file descriptor), imported into NVIDIA's OpenCL by ``cl_khr_external_memory_opaque_fd``
(``clCreateBufferWithProperties``), its descriptor sent to the other rank's process
(``SCM_RIGHTS``), mapped there for that rank's GPU (``cuMemImportFromShareableHandle``,
``cuMemMap``, ``cuMemSetAccess``), and copied by ``cuMemcpyDtoD`` over NVLink.

Two processes (a fork, one GPU each), through :mod:`finepar.device.peer` (the probe's
first form, at 56aa78f, carried its own ctypes calls: the committed run's). For each size and ``--repeats`` times: rank 0's OpenCL
kernel rewrites its buffer and finishes; rank 1 copies it into its own imported buffer by
CUDA, then reads the first and last words back through OpenCL (the whole chain checked).
GB/s of the copy alone and of the round (kernel, finish, message, copy, read). First, rank 0
checks whether a kernel writing a sub-buffer of the imported memory lands at its offset
(``sub_buffer`` in its report). Each step's
outcome, an error included, is in the JSON, written at the end; where there is one GPU both
ranks use it.

    python benchmarks/probe_extmem.py --json $OUT/probe_extmem.json
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback

import numpy as np

from common import log, main_of, rate_stats, today, transfer_probe_args, write_json

KERNEL = """
__kernel void touch(__global uint *a, const uint v) {
    const size_t i = get_global_id(0);
    a[i] = v + (uint)i;
}
"""


class Rank:
    """One process's side: its GPU (:mod:`finepar.device.peer`), its memory imported
    into OpenCL, and the peer's memory mapped for its GPU."""

    def __init__(self, rank: int, nbytes: int, report: dict):
        from finepar.api import make_pair
        from finepar.device import cl
        from finepar.device.peer import PeerMemory, unavailable
        from finepar.mpi.setup import local_gpu
        self.mod, self.report = cl(), report
        self.side = make_pair(gpu=local_gpu(rank, None)).side("gpu")
        dev = self.side.queue.device
        report["device"] = dev.name.strip()
        report["extensions"] = [e for e in dev.extensions.split() if "external" in e]
        report["all_extensions"] = dev.extensions.split()
        report["driver"] = dev.driver_version
        why = unavailable(self.side)
        if why:
            raise RuntimeError(why)
        self.mem = PeerMemory(self.side, nbytes)
        self.fd, self.size = self.mem.fd, self.mem.size
        ctx = self.side.context
        self.touch = self.mod.Kernel(self.mod.Program(ctx, KERNEL).build(), "touch")
        report["imported"] = True

    def sub_buffer_check(self, words: int = 1 << 16) -> dict:
        """Whether a kernel writing a sub-buffer of the imported memory (the second half)
        lands at that offset of the memory: the parent buffer read back through OpenCL,
        both halves."""
        half = 4 * words
        q = self.side.queue
        self.mod.enqueue_fill_buffer(q, self.mem.buffer, np.uint32(0), 0, 2 * half)
        sub = self.mem.buffer.get_sub_region(half, half)
        self.touch(q, (words,), None, sub, np.uint32(7))
        back = np.empty(2 * words, np.uint32)
        self.mod.enqueue_copy(q, back, self.mem.buffer, is_blocking=True)
        want = 7 + np.arange(words, dtype=np.uint32)
        return {"second_half_right": bool(np.array_equal(back[words:], want)),
                "first_half_untouched": bool(not back[:words].any()),
                "first_half_holds_the_write": bool(np.array_equal(back[:words], want))}

    def map_peer(self, fd: int, size: int) -> None:
        from finepar.device.peer import PeerView
        self.peer = PeerView(fd, size)
        self.report["peer_mapped"] = True

    def write(self, k: int, words: int) -> None:
        self.touch(self.side.queue, (words,), None, self.mem.buffer, np.uint32(k))
        self.side.queue.finish()

    def copy_in(self, nbytes: int) -> None:
        """The peer's first ``nbytes`` into this rank's memory, by this rank's GPU."""
        from finepar.device.peer import driver
        driver().copy(self.mem.ptr, self.peer.ptr, nbytes)
        driver().synchronize()

    def ends(self, words: int) -> tuple[int, int]:
        first, last = np.empty(1, np.uint32), np.empty(1, np.uint32)
        q = self.side.queue
        self.mod.enqueue_copy(q, first, self.mem.buffer, src_offset=0)
        self.mod.enqueue_copy(q, last, self.mem.buffer, src_offset=4 * (words - 1),
                              is_blocking=True)
        return int(first[0]), int(last[0])


def send(sock, obj, fds=()) -> None:
    data = json.dumps(obj).encode()
    socket.send_fds(sock, [len(data).to_bytes(4, "little") + data], list(fds))


def recv(sock):
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
    return json.loads(msg[4:4 + int.from_bytes(msg[:4], "little")]), fds


def rank_main(rank: int, sock, args, sizes: list[int]) -> dict:
    """Rank 0 writes, rank 1 copies and checks; returns this rank's report."""
    report: dict = {"rank": rank, "steps": []}
    try:
        me = Rank(rank, max(sizes), report)
        if rank == 0:
            try:
                report["sub_buffer"] = me.sub_buffer_check()
            except Exception as exc:  # noqa: BLE001 - the probe reports what it found
                report["sub_buffer"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"sub-buffer of imported memory: {report['sub_buffer']}")
        send(sock, {"size": me.size}, [me.fd])
        peer, fds = recv(sock)
        me.map_peer(fds[0], peer["size"])
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["trace"] = traceback.format_exc()
        try:
            send(sock, {"failed": report["error"]})
        except OSError:
            pass
        return report
    for nbytes in sizes:
        words, copies, rounds, right = nbytes // 4, [], [], True
        for k in range(args.repeats + 1):
            if rank == 0:
                t0 = time.perf_counter()
                me.write(k, words)
                send(sock, {"k": k})
                recv(sock)
                rounds.append(time.perf_counter() - t0)
            else:
                msg, _ = recv(sock)
                if "failed" in msg:
                    report["error"] = "peer failed: " + msg["failed"]
                    return report
                t0 = time.perf_counter()
                me.copy_in(nbytes)
                copies.append(time.perf_counter() - t0)
                first, last = me.ends(words)
                right &= first == k and last == (k + words - 1) % (1 << 32)
                send(sock, {"done": k})
        step = {"mb": nbytes / 1e6}
        if rank == 0:
            step["round"] = rate_stats(rounds[1:], nbytes)
        else:
            step.update(copy=rate_stats(copies[1:], nbytes), right=bool(right))
        report["steps"].append(step)
    return report


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = [int(mb * 1e6) // 4 * 4 for mb in args.sizes]
    out = {"script": "benchmarks/probe_extmem.py", "date": today(), "args": vars(args)}
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        a.close()
        try:
            rep = rank_main(1, b, args, sizes)
        except Exception:
            rep = {"rank": 1, "error": traceback.format_exc()}
        send(b, {"report": rep})
        os._exit(0)
    b.close()
    out["rank0"] = rank_main(0, a, args, sizes)
    while True:
        msg, _ = recv(a)
        if "report" in msg:
            out["rank1"] = msg["report"]
            break
    os.waitpid(pid, 0)
    for step in out["rank1"].get("steps", []):
        log(f"{step['mb']:g} MB: copy {step['copy']['gbps_median']:.1f} GB/s"
            f"{'' if step['right'] else ' WRONG'}")
    for r in ("rank0", "rank1"):
        if "error" in out[r]:
            log(f"{r}: {out[r]['error']}")
    write_json(args.json, out)
    return 0


def parse_args(argv=None):
    return transfer_probe_args(__doc__, "probe_extmem", 8, argv)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
