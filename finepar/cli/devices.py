"""``finepar devices``: every OpenCL platform and device with its role, and the pair
FinePar picks."""

from __future__ import annotations

import json

from ..errors import FineParError
from ..report import human_bytes
from .options import add_device_options, check_outputs


def cmd_devices(args) -> int:
    from .config import load_config
    from ..device import list_devices, prepare_icd, select_pair
    check_outputs(args, json_=(".json",))
    config = load_config(args.config)
    icd = prepare_icd()
    devices = list_devices(config.get("cache_overrides"))
    sel = None
    err = None
    try:
        sel = select_pair(args.cpu, args.gpu, config=config, devices=devices)
    except FineParError as exc:
        err = str(exc)
    ranks = _between_ranks(sel) if sel is not None else None
    if args.json:
        out = {"devices": [d.to_dict() for d in devices], "icd": {
            "nvidia_library": icd.nvidia_library, "registered": icd.registered,
            "vendors_dir": icd.vendors_dir, "fix": icd.fix_command, "notes": icd.notes},
            "selection": sel.to_dict() if sel else None, "error": err,
            "config": config.get("source"), "between_ranks": ranks}
        text = json.dumps(out, indent=2)
        if args.json == "-":
            print(text)
        else:
            from ..files import atomic_write_text
            atomic_write_text(args.json, text + "\n")
    from ..report import format_table
    rows = []
    for d in devices:
        role = ""
        if sel is not None:
            roles = []
            if d.address == sel.cpu.address:
                roles.append("cpu")
            if d.address == sel.gpu.address:
                roles.append("gpu (emulated)" if sel.emulated else "gpu")
            role = "+".join(roles)
        cache = human_bytes(d.cache_bytes)
        if d.cache_source != "driver":
            cache += f" ({d.cache_source}; driver says {human_bytes(d.cache_bytes_reported)})"
        rows.append([d.address, d.platform[:28], d.name[:34], d.kind, role, d.compute_units,
                     human_bytes(d.global_mem_bytes), human_bytes(d.max_alloc_bytes), cache,
                     "yes" if d.host_unified_memory else "no"])
    if args.json != "-":
        if rows:
            print(format_table(["P:D", "platform", "device", "type", "role", "CUs", "memory",
                                "max alloc", "L2 cache", "host-unified"], rows,
                               align="lllllrrrll"))
        else:
            print("no OpenCL devices found")
        for note in icd.notes:
            print(f"note: {note}")
        if icd.nvidia_library and not icd.registered and not any(
                "nvidia" in d.platform.lower() for d in devices):
            print(f"note: the NVIDIA driver library {icd.nvidia_library} is present but no NVIDIA "
                  f"platform loaded; fix: {icd.fix_command}")
        if config.get("source"):
            print(f"config: {config['source']}")
        if sel is not None:
            print(f"selected: cpu = {sel.cpu.address} {sel.cpu.name} ({sel.how.get('cpu')}); "
                  f"gpu = {sel.gpu.address} {sel.gpu.name} ({sel.how.get('gpu')})")
            if sel.emulated:
                print("EMULATED pair: no GPU in use; the gpu role is a second context on the "
                      "CPU device. Every code path runs; timings say nothing about a GPU.")
            mem = ("shared" if sel.emulated or (sel.same_platform and sel.gpu.host_unified_memory)
                   else "split")
            print(f"memory mode (auto): {mem}")
            print(f"between ranks (mpiexec): {ranks['line']}")
    if err:
        raise FineParError(err)
    return 0


def add(sub) -> None:
    """``finepar devices``."""
    d = sub.add_parser("devices", help="list OpenCL devices and the pair FinePar picks",
                       description="List every OpenCL platform and device with its role, "
                                   "compute units, memory, cache and host-unified memory, and "
                                   "show which CPU and GPU FinePar picks.")
    add_device_options(d)
    d.add_argument("--json", metavar="PATH", help="also write the listing as JSON ('-': stdout only)")
    d.set_defaults(func=cmd_devices)


def _between_ranks(sel) -> dict:
    """How a distributed run's halos would move between ranks on the selected GPU:
    ``{"gpu_to_gpu": bool, "line": str}`` (:mod:`finepar.mpi.peers`; whether CUDA's
    driver knows the device is learnt at the run)."""
    from ..device.discovery import _cl_device
    from ..device.peer import EXTENSION
    if sel.emulated:
        return {"gpu_to_gpu": False, "line": "halos through host memory (the pair is "
                "emulated; --exchange gpu emulates the GPU path's layout)"}
    has = EXTENSION in _cl_device(sel.gpu).extensions.split()
    return {"gpu_to_gpu": has, "line": (
        f"halos GPU to GPU where every rank's GPU is like this one (its OpenCL has {EXTENSION})"
        if has else f"halos through host memory (this GPU's OpenCL has no {EXTENSION})")}
