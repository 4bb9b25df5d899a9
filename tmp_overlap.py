import json, sys, threading, time
t00 = time.perf_counter()
from finepar.api import load_graph, make_pair
mode, f = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
out = {"mode": mode, "import": t0 - t00}
if mode == "seq":
    p = make_pair(); t1 = time.perf_counter(); g = load_graph(f); t2 = time.perf_counter()
    out.update(pair=t1 - t0, load=t2 - t1)
else:
    box = {}
    th = threading.Thread(target=lambda: box.update(p=make_pair(), t=time.perf_counter()))
    th.start(); g = load_graph(f); t2 = time.perf_counter(); th.join()
    out.update(pair=box["t"] - t0, load=t2 - t0)
out["total"] = time.perf_counter() - t0
print(json.dumps(out))
