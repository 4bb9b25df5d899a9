"""Diagnosis on the device: PoCL's command latency on this host and a small BFS run's phases."""
import time, sys, json, numpy as np, functools, collections
sys.path.insert(0, "benchmarks")
from finepar import api
from finepar.api import make_pair
from finepar.device import cl
from finepar.inputs import load_graph
import finepar.engine.frontier as fr, finepar.engine.walk as wk
out = {}
pair = make_pair()
for role in ("cpu", "gpu"):
    side = pair.side(role)
    ctx, q, m = side.context, side.queue, cl()
    prg = m.Program(ctx, "__kernel void e(__global int *a){ if(get_global_id(0)==0) a[0]+=1; }").build()
    k = m.Kernel(prg, "e"); buf = m.Buffer(ctx, m.mem_flags.READ_WRITE, 64); h = np.zeros(16, np.int32)
    def t(f, n=300):
        for _ in range(20): f()
        ts = []
        for i in range(n):
            t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
        return [round(1e6 * float(np.percentile(ts, p)), 1) for p in (0, 50, 90)]
    def launch_wait():
        k.set_args(buf); m.enqueue_nd_range_kernel(q, k, (1,), (1,)).wait()
    def launch_read():
        k.set_args(buf); m.enqueue_nd_range_kernel(q, k, (1,), (1,)); m.enqueue_copy(q, h, buf, is_blocking=True)
    def three_launch_three_read():
        k.set_args(buf)
        for _ in range(3): m.enqueue_nd_range_kernel(q, k, (1,), (1,))
        m.enqueue_copy(q, h[:4], buf, is_blocking=False); m.enqueue_copy(q, h[4:8], buf, is_blocking=False)
        m.enqueue_copy(q, h[8:], buf, is_blocking=True)
    def read_only():
        m.enqueue_copy(q, h, buf, is_blocking=True)
    out[role] = {f.__name__: t(f) for f in (launch_wait, launch_read, three_launch_three_read, read_only)}
    print(role, out[role], flush=True)
acc = collections.defaultdict(list)
def wrap(cls, name, label):
    f = getattr(cls, name)
    @functools.wraps(f)
    def g(*a, **kw):
        t0 = time.perf_counter(); r = f(*a, **kw); acc[label].append(time.perf_counter() - t0); return r
    setattr(cls, name, g)
for c in vars(fr).values():
    if isinstance(c, type) and "_start" in c.__dict__:
        wrap(c, "_start", "start"); wrap(c, "_walk_levels", "walk_levels")
for c in vars(wk).values():
    if isinstance(c, type) and "read_out" in c.__dict__:
        wrap(c, "read_out", "read_out")
for gname in ("adder_dcop_05.mtx", "USPowerGrid.mtx", "ca-GrQc.mtx"):
    g = load_graph(f".data/{gname}")
    for app in ("bfs", "cc"):
        ts = []
        for i in range(25):
            acc.clear()
            res, rep = api.run(app, g, pair=pair)
            if i >= 5:
                ts.append({"run": rep.timings["run"], **{k: v[-1] for k, v in acc.items()}})
        med = {k: round(1e3 * float(np.median([t[k] for t in ts if k in t])), 3) for k in ts[0]}
        out[f"{app} {gname}"] = {"plan": rep.plan["label"], "launches": rep.timings["launches"], "ms": med}
        print(app, gname, out[f"{app} {gname}"], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
