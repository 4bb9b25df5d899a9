"""`finepar run bfs FILE` as a user runs it, three codes interleaved in one lease: a cold run
each (its own empty cache), then warm rounds; each process's wall seconds, and the report's
phases line, into one JSON."""
import json, os, subprocess, sys, time
R = os.getcwd(); out = sys.argv[1]
codes = {"base": f"{R}/.carry6/base", "prerule": f"{R}/.carry6/prerule", "head": R}
rows = []
for g in ("USPowerGrid.mtx.gz", "ca-GrQc.mtx.gz"):
    for rnd in range(7):
        for c, path in codes.items():
            env = dict(os.environ, PYTHONPATH=f"/tmp/site:{path}", FINEPAR_CACHE_DIR=f"/tmp/fc-{c}-{g}")
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "finepar", "run", "bfs", f"{R}/.data/{g}", "-o", "/tmp/a.npy"],
                               cwd="/tmp", env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            lines = [l.strip() for l in p.stdout.splitlines() if l.strip().startswith(("start", "plan"))]
            rows.append({"graph": g, "code": c, "round": rnd, "wall_s": wall, "rc": p.returncode, "lines": lines})
            print(g, c, rnd, round(wall, 3), p.returncode, flush=True)
json.dump(rows, open(out, "w"), indent=1)
