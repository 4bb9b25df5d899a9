"""NVIDIA's OpenCL driver where the ICD loader was not told of it (common in containers):
found and registered for this process before :mod:`pyopencl` is imported, with the
system-wide fix printed (DESIGN.md §3, "device")."""

from __future__ import annotations

import ctypes.util
import glob
import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field


#: Where to look for NVIDIA's OpenCL driver when the ICD loader was not told about it.
NVIDIA_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/compat",
    "/run/opengl-driver/lib",
)


NVIDIA_LIBRARY = "libnvidia-opencl.so.1"


SYSTEM_VENDORS_DIR = "/etc/OpenCL/vendors"


@dataclass
class IcdReport:
    """What :func:`prepare_icd` found and did.

    Attributes
    ----------
    nvidia_library : str or None
        Absolute path of ``libnvidia-opencl.so.1`` if found on disk.
    registered : bool
        True if a system ICD file already names the NVIDIA driver.
    vendors_dir : str or None
        The ``OCL_ICD_VENDORS`` directory FinePar created for this process, if any.
    notes : list of str
        Human-readable lines for ``finepar devices``.
    """

    nvidia_library: str | None = None
    registered: bool = False
    vendors_dir: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fix_command(self) -> str | None:
        """The shell command that registers the NVIDIA driver system-wide, or None."""
        if self.nvidia_library and not self.registered:
            return (f"mkdir -p {SYSTEM_VENDORS_DIR} && "
                    f"echo {self.nvidia_library} > {SYSTEM_VENDORS_DIR}/nvidia.icd")
        return None


def _icd_libraries(vendors: str) -> dict[str, str]:
    """Map ``*.icd`` file name -> library line, for a vendors directory or single file."""
    out: dict[str, str] = {}
    paths: list[str] = []
    if os.path.isdir(vendors):
        paths = sorted(glob.glob(os.path.join(vendors, "*.icd")))
    elif os.path.isfile(vendors):
        paths = [vendors]
    for p in paths:
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                line = f.read().strip()
        except OSError:
            continue
        if line:
            out[os.path.basename(p)] = line
    return out


def find_nvidia_opencl(extra_dirs: tuple[str, ...] = ()) -> str | None:
    """Find NVIDIA's OpenCL driver library on disk.

    Looks in ``extra_dirs``, ``LD_LIBRARY_PATH``, the dynamic linker cache
    (``ldconfig -p``) and the usual driver folders (:data:`NVIDIA_LIBRARY_DIRS`).

    Returns
    -------
    str or None
        Absolute path of ``libnvidia-opencl.so.1`` (or a versioned sibling), or None.
    """
    def in_dirs(dirs):
        for d in dirs:
            exact = os.path.join(d, NVIDIA_LIBRARY)
            if os.path.exists(exact):
                return exact
            found = sorted(glob.glob(os.path.join(d, "libnvidia-opencl.so.*")))
            if found:
                return found[0]
        return None

    # the dynamic loader's own order: LD_LIBRARY_PATH, then its cache, then default folders
    hit = in_dirs(list(extra_dirs) + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":")
                                      if d])
    if hit:
        return hit
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                             timeout=5).stdout
        for line in out.splitlines():
            if "libnvidia-opencl.so" in line and "=>" in line:
                path = line.split("=>", 1)[1].strip()
                if os.path.exists(path):
                    return path
    except (OSError, subprocess.SubprocessError):
        pass
    hit = in_dirs(NVIDIA_LIBRARY_DIRS)
    if hit:
        return hit
    name = ctypes.util.find_library("nvidia-opencl")
    if name and os.path.isabs(name) and os.path.exists(name):
        return name
    return None


_ICD_REPORT: IcdReport | None = None


def prepare_icd() -> IcdReport:
    """Make an unregistered NVIDIA OpenCL driver visible to the ICD loader.

    Containers often ship ``libnvidia-opencl.so.1`` without
    ``/etc/OpenCL/vendors/nvidia.icd``; the ICD loader then shows no NVIDIA
    platform. When that is the case, and ``pyopencl`` is not imported yet, this
    writes a private vendors folder holding the system's ``.icd`` files plus one
    for the NVIDIA driver, and points ``OCL_ICD_VENDORS`` at it for this process
    (and its children). Set ``FINEPAR_NO_ICD_FIX=1`` to disable.

    Returns
    -------
    IcdReport
        What was found and done; cached for the life of the process.
    """
    global _ICD_REPORT
    if _ICD_REPORT is not None:
        return _ICD_REPORT
    rep = IcdReport()
    vendors = os.environ.get("OCL_ICD_VENDORS") or SYSTEM_VENDORS_DIR
    libs = _icd_libraries(vendors)
    rep.registered = any("nvidia" in lib.lower() for lib in libs.values())
    rep.nvidia_library = find_nvidia_opencl()
    if rep.registered:
        rep.notes.append(f"NVIDIA OpenCL driver registered in {vendors}")
    elif rep.nvidia_library is None:
        pass
    elif os.environ.get("FINEPAR_NO_ICD_FIX"):
        rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} is not registered "
                         f"(FINEPAR_NO_ICD_FIX set); to fix: {rep.fix_command}")
    elif "pyopencl" in sys.modules:
        rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} is not registered and "
                         f"pyopencl was imported before FinePar could register it; "
                         f"to fix: {rep.fix_command}")
    else:
        entries = dict(libs)
        entries["finepar-nvidia.icd"] = rep.nvidia_library
        digest = hashlib.sha1(repr(sorted(entries.items())).encode()).hexdigest()[:12]
        folder = os.path.join(tempfile.gettempdir(), f"finepar-icd-{os.getuid()}-{digest}")
        try:
            os.makedirs(folder, exist_ok=True)
            for name, lib in entries.items():
                path = os.path.join(folder, name)
                tmp = path + f".{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(lib + "\n")
                os.replace(tmp, path)
            os.environ["OCL_ICD_VENDORS"] = folder
            rep.vendors_dir = folder
            rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} was not registered as "
                             f"an ICD; registered it for this process (OCL_ICD_VENDORS={folder}). "
                             f"System-wide fix: {rep.fix_command}")
        except OSError as exc:
            rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} is not registered and "
                             f"FinePar could not register it ({exc}); to fix: {rep.fix_command}")
    _ICD_REPORT = rep
    return rep
