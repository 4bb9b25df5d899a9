"""Device discovery, roles, the NVIDIA ICD fallback, contexts and program builds."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from importlib import resources

import numpy as np
import pytest

from finepar import device as runtime
from finepar.cli.config import load_config
from finepar.errors import BuildError, ConfigError, DeviceError


def test_kernels_are_package_data():
    root = resources.files("finepar.opencl")
    names = [f"skeleton/{f.name}" for f in root.joinpath("skeleton").iterdir()
             if f.name.endswith(".cl")]
    names += [f"apps/{a.name}/{f.name}" for a in root.joinpath("apps").iterdir() if a.is_dir()
              for f in a.iterdir() if f.name.endswith(".cl")]
    assert {"skeleton/rowop.cl", "skeleton/vector.cl", "skeleton/frontier.cl",
            "apps/spmv/rowop.cl", "apps/pagerank/rowop.cl"} <= set(names)
    for name in names:
        assert "#define" in runtime.kernel_source(name) or "__kernel" in runtime.kernel_source(name)


def test_list_devices_finds_a_cpu():
    devices = runtime.list_devices()
    cpus = [d for d in devices if d.kind == "cpu"]
    assert cpus, "PoCL should provide a CPU device"
    d = cpus[0]
    assert d.compute_units >= 1 and d.global_mem_bytes > 0 and d.max_alloc_bytes > 0
    assert d.host_unified_memory
    assert d.key == f"{d.platform}|{d.name}"


def test_auto_selection_and_emulation():
    sel = runtime.select_pair()
    assert sel.cpu.kind == "cpu"
    if not any(d.kind == "gpu" for d in runtime.list_devices()):
        assert sel.emulated and sel.gpu.address == sel.cpu.address
        assert "EMULATED" in sel.describe()
    forced = runtime.select_pair(gpu="emulate")
    assert forced.emulated and forced.how["gpu"] == "flag"


def test_selectors_flag_env_config(monkeypatch, tmp_path):
    devices = runtime.list_devices()
    d = devices[0]
    assert runtime.match_device(d.address, devices) is d
    assert runtime.match_device(d.name[:6].lower(), devices).name == d.name
    with pytest.raises(DeviceError, match="no OpenCL device"):
        runtime.match_device("no-such-device-xyz", devices)
    with pytest.raises(DeviceError, match="at 9:9"):
        runtime.match_device("9:9", devices)
    monkeypatch.setenv("FINEPAR_CPU_DEVICE", d.address)
    assert runtime.select_pair(devices=devices).how["cpu"] == "environment"
    assert runtime.select_pair(cpu=d.address, devices=devices).how["cpu"] == "flag"
    monkeypatch.delenv("FINEPAR_CPU_DEVICE")
    cfg = tmp_path / "p.toml"
    cfg.write_text(f'platform = "test"\n[devices]\ncpu = "{d.address}"\ngpu = "emulate"\n'
                   f'[cache]\n"{d.name[:5]}" = 1234567\n')
    config = load_config(cfg)
    sel = runtime.select_pair(config=config)
    assert sel.how == {"cpu": "config", "gpu": "config"} and sel.emulated
    over = runtime.list_devices(config["cache_overrides"])
    assert over[0].cache_bytes == 1234567 and over[0].cache_source == "config"


def test_bad_configs_name_the_file(tmp_path):
    cases = {"a.toml": "memory = 'sideways'\n", "b.toml": "bogus = 1\n",
             "c.toml": "[launch.gpu]\nlanes = -4\n", "d.toml": "devices = [\n"}
    for name, text in cases.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(ConfigError) as e:
            load_config(p)
        assert name in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")


def test_pair_modes_and_launch_geometry():
    sel = runtime.select_pair(gpu="emulate")
    shared = runtime.DevicePair(sel, "shared")
    split = runtime.DevicePair(sel, "split")
    assert shared.cpu.context is shared.gpu.context and shared.shared
    assert split.cpu.context is not split.gpu.context and not split.shared
    assert split.gpu.launch.lanes == 32 and split.cpu.launch.lanes == 8
    over = runtime.DevicePair(sel, "split", launch_overrides={"gpu": {"lanes": 16}})
    assert over.gpu.launch.lanes == 16
    with pytest.raises(DeviceError, match="power of two"):
        runtime.DevicePair(sel, "split", launch_overrides={"gpu": {"lanes": 12}})
    with pytest.raises(DeviceError, match="memory mode"):
        runtime.DevicePair(sel, "sideways")


def test_shared_mode_refuses_two_platforms():
    sel = runtime.select_pair(gpu="emulate")
    fake_gpu = dataclasses.replace(sel.cpu, platform_index=sel.cpu.platform_index + 7,
                                   kind="gpu", name="Fake GPU")
    two = runtime.Selection(cpu=sel.cpu, gpu=fake_gpu, emulated=False, how={})
    with pytest.raises(DeviceError, match="different platforms"):
        runtime.DevicePair(two, "shared")


def test_build_errors_carry_the_log():
    pair = runtime.DevicePair(runtime.select_pair(gpu="emulate"), "split")
    with pytest.raises(BuildError) as e:
        pair.program(pair.cpu, ("skeleton/rowop.cl",), {"WG": 64})  # no app fragment: #error
    assert "skeleton/rowop.cl" in str(e.value) and e.value.log
    assert "\n" not in str(e.value)


def test_program_memo_and_kernel_reuse():
    pair = runtime.DevicePair(runtime.select_pair(gpu="emulate"), "split")
    defines = {"WG": 64, "MAPPING": 0}
    src = ("apps/spmv/rowop.cl", "skeleton/rowop.cl")
    p1 = pair.program(pair.cpu, src, defines)
    assert pair.program(pair.cpu, src, dict(defines)) is p1
    assert pair.program(pair.gpu, src, defines) is not p1  # other context
    k = pair.kernel(pair.cpu, src, defines, "rowop")
    assert pair.kernel(pair.cpu, src, defines, "rowop") is k


def test_a_process_reuses_the_pair_it_opened_and_its_programs():
    from finepar import api
    from finepar.device import pair as pairs
    import scipy.sparse as sp
    pairs.forget_pairs()
    first = api.make_pair(gpu="emulate", memory="split")
    assert api.make_pair(gpu="emulate", memory="split") is first
    assert api.make_pair(gpu="emulate", memory="shared") is not first
    own = api.make_pair(gpu="emulate", memory="split", keep=False)  # an MPI rank's
    assert own is not first and api.make_pair(gpu="emulate", memory="split") is first
    bigger = api.make_pair(gpu="emulate", memory="split",
                           config={"cache_overrides": {"": 4096}})
    assert bigger is not first  # other device facts: another pair
    g = sp.csr_matrix((np.ones(4, np.float32), ([0, 1, 2, 3], [1, 2, 3, 0])), shape=(4, 4))
    api.run("bfs", g, memory="split", root=0, cache=False)
    opened = api.make_pair(memory="split")
    built = len(opened.build_log)
    assert built > 0
    result, _ = api.run("bfs", g, memory="split", root=0, cache=False)
    assert len(opened.build_log) == built  # the second call built nothing
    assert result.values.tolist() == [0, 1, 2, 3]
    assert pairs.forget_pairs() >= 2
    assert api.make_pair(memory="split") is not opened


def test_zero_copy_buffers_round_trip():
    cl = runtime.cl()
    pair = runtime.DevicePair(runtime.select_pair(gpu="emulate"), "split")
    a = np.arange(1000, dtype=np.int32)
    for side in pair.sides():
        buf = runtime.alloc(side, a)
        out = np.empty_like(a)
        cl.enqueue_copy(side.queue, out, buf, is_blocking=True)
        np.testing.assert_array_equal(a, out)


_ICD_SCRIPT = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {src!r})
    from finepar import device as runtime
    rep = runtime.prepare_icd()
    out = {{"lib": rep.nvidia_library, "registered": rep.registered,
           "dir": rep.vendors_dir, "env": os.environ.get("OCL_ICD_VENDORS"),
           "fix": rep.fix_command, "notes": rep.notes}}
    if rep.vendors_dir:
        out["files"] = {{f: open(os.path.join(rep.vendors_dir, f)).read().strip()
                        for f in sorted(os.listdir(rep.vendors_dir))}}
    if {load!r}:
        out["devices"] = [d.kind for d in runtime.list_devices()]
    print(json.dumps(out))
""")


def _icd_probe(tmp_path, vendors, load=False, extra_env=None):
    libdir = tmp_path / "nvlib"
    libdir.mkdir(exist_ok=True)
    (libdir / "libnvidia-opencl.so.1").write_bytes(b"not really a library")
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir), OCL_ICD_VENDORS=str(vendors),
               TMPDIR=str(tmp_path))
    env.pop("FINEPAR_NO_ICD_FIX", None)
    env.update(extra_env or {})
    src = os.path.dirname(os.path.dirname(os.path.abspath(runtime.__file__)))
    r = subprocess.run([sys.executable, "-c", _ICD_SCRIPT.format(src=src, load=load)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), libdir


def test_unregistered_nvidia_driver_is_registered_for_the_process(tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "other.icd").write_text("libOtherOpenCL.so\n")
    out, libdir = _icd_probe(tmp_path, vendors, load=True)
    lib = str(libdir / "libnvidia-opencl.so.1")
    assert out["lib"] == lib and not out["registered"]
    assert out["env"] == out["dir"] and out["dir"].startswith(str(tmp_path))
    assert out["files"]["finepar-nvidia.icd"] == lib
    assert out["files"]["other.icd"] == "libOtherOpenCL.so"  # the system's entries are kept
    assert out["fix"] == (f"mkdir -p /etc/OpenCL/vendors && echo {lib} > "
                          "/etc/OpenCL/vendors/nvidia.icd")
    assert any("registered it for this process" in n for n in out["notes"])
    # a driver that fails to load must not hide the other platforms
    assert "cpu" in out["devices"]


def test_registered_nvidia_driver_is_left_alone(tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    out, _ = _icd_probe(tmp_path, vendors)
    assert out["registered"] and out["dir"] is None and out["env"] == str(vendors)
    assert out["fix"] is None


def test_icd_fix_can_be_disabled(tmp_path):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    out, _ = _icd_probe(tmp_path, vendors, extra_env={"FINEPAR_NO_ICD_FIX": "1"})
    assert out["dir"] is None and "to fix:" in out["notes"][0]


def test_shipped_configs_parse():
    from pathlib import Path
    folder = Path(__file__).resolve().parents[1] / "configs"
    files = sorted(folder.glob("*.toml"))
    assert files
    for f in files:
        cfg = load_config(f)
        assert cfg["source"] == str(f) and cfg["devices"]


def test_guessed_builds_run_one_at_a_time_and_the_rest_drop(pairs):
    """Guessed builds queue on one thread; dropping them cancels those not yet begun, the
    one running finishes, and settle waits for it."""
    import threading
    pair = pairs["shared"]
    started, gate, ran = threading.Event(), threading.Event(), []

    def first() -> None:
        started.set()
        gate.wait(10)
        ran.append("first")
    pair.guess_build(first)
    for k in range(3):
        pair.guess_build(ran.append, k)
    assert started.wait(10)
    pair.drop_guesses()
    gate.set()
    pair.settle()
    assert ran == ["first"]


def test_unregistered_nvidia_driver_is_named_when_the_gpu_is_emulated(monkeypatch):
    """No GPU found while NVIDIA's OpenCL driver is installed but was left unregistered
    (here: pyopencl imported before FinePar could register it): the selection's ``how``
    says why the GPU role is emulated and a warning says so at once; with the driver
    registered, or none installed, nothing is added."""
    from finepar.device import discovery
    from finepar.device.icd import IcdReport
    cpus = [d for d in runtime.list_devices() if d.kind == "cpu"]
    lib = "/usr/local/nvidia/lib64/libnvidia-opencl.so.1"
    why = (f"NVIDIA OpenCL driver {lib} is not registered and pyopencl was imported before "
           f"FinePar could register it")
    left = IcdReport(nvidia_library=lib, notes=[why])
    monkeypatch.setattr(discovery, "prepare_icd", lambda: left)
    with pytest.warns(RuntimeWarning, match="emulated on the CPU: NVIDIA OpenCL driver"):
        sel = runtime.select_pair(devices=cpus)
    assert sel.emulated and sel.how["gpu"] == f"auto (no GPU found: emulated); {why}"
    for rep in (IcdReport(nvidia_library=lib, registered=True), IcdReport(),
                IcdReport(nvidia_library=lib, vendors_dir="/tmp/finepar-icd")):
        monkeypatch.setattr(discovery, "prepare_icd", lambda rep=rep: rep)
        assert runtime.select_pair(devices=cpus).how["gpu"] == "auto (no GPU found: emulated)"
