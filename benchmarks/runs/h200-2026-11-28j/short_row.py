"""One-off: the one work-group's levels with SHORT_ROW 8 (a short chunk takes its own edges)
against 0 (every chunk scanned), GPU alone under group_loop=always, interleaved; medians ms."""
import json, sys, time
import numpy as np
from finepar import api
from finepar.api import make_pair
from finepar.engine import EngineOptions, grouplevels
from finepar.inputs import load_graph
pair = make_pair()
out = {}
opts = EngineOptions(group_loop="always")
for name in sys.argv[2].split(","):
    g = load_graph(f".data/{name}")
    for app in ("bfs", "sssp"):
        kw = {"weights": "abs"} if app == "sssp" and g.data is not None and (g.data < 0).any() else {}
        times = {0: [], 8: []}
        for i in range(8):
            for short in (0, 8):
                grouplevels.SHORT_ROW = short
                res, rep = api.run(app, g, pair=pair, devices="gpu", options=opts, **kw)
                assert res.extra["where"] == "group"
                if i:
                    times[short].append(rep.timings["run"])
        row = {str(k): {"median_ms": 1e3 * float(np.median(v)), "min_ms": 1e3 * min(v),
                        "max_ms": 1e3 * max(v)} for k, v in times.items()}
        row["levels"] = res.iterations
        out[f"{app} {name}"] = row
        print(app, name, res.iterations, {k: round(v["median_ms"], 3) for k, v in row.items() if k != "levels"}, flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
