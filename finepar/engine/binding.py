"""A kernel's arguments, set, and its launch enqueued, at the least host cost a step allows
(DESIGN.md §6: a small input's steps are paced by the host's enqueues).

* :func:`set_arg`: one argument, a NumPy scalar's bytes given directly;
* :func:`call`: every argument of a kernel, then the enqueue (what pyopencl's kernel call
  does, at a tenth of its cost);
* :func:`bind_changed`, :func:`own_kernel`, :func:`enqueue_bound`: only the arguments that
  changed since a kernel object's last launch, on the engine's own copy of the kernel.

:class:`finepar.engine.launches.Launch` binds a row operation's arguments by name through
:func:`set_arg`.
"""

from __future__ import annotations

import weakref

import numpy as np

#: An argument never given (:meth:`Launch.bind`).
UNSET = object()
#: The :mod:`pyopencl` module, imported once (:func:`opencl`).
_OPENCL: list = []


def opencl():
    """:mod:`pyopencl`, found on the first launch, not on each (a launch's host cost sets
    the pace of small steps: DESIGN.md §6); its functions are still looked up at each call,
    so a probe that wraps them (``benchmarks/probe_host.py``) sees every launch."""
    if not _OPENCL:
        from ..device import cl
        _OPENCL.append(cl())
    return _OPENCL[0]


#: NumPy scalars are set through pyopencl's buffer path (``Kernel._set_arg_buf``, what its
#: kernel calls use once the scalars' types are declared), not ``Kernel.set_arg``, which
#: tries each kind of argument in turn before it takes a scalar's bytes: 9.3 us a scalar
#: on an H200's host against 0.22 (6-16 against 0.19 on the 2-core box;
#: ``benchmarks/probe_enqueue.py``, 2026-11-29). A step that changes a scalar (a PageRank
#: iteration's sums slot, a BFS level's number) paid that every launch.
FAST_SCALARS = True


def set_arg(kernel, index: int, value) -> None:
    """Set one argument of a kernel, a NumPy scalar's bytes given directly.

    Parameters
    ----------
    kernel : pyopencl.Kernel
    index : int
        The argument's position.
    value : pyopencl.MemoryObject, numpy.generic, pyopencl.LocalMemory or None
        A NumPy scalar goes through ``kernel._set_arg_buf`` where pyopencl offers it and
        :data:`FAST_SCALARS` is on; anything else through ``kernel.set_arg``. OpenCL
        checks only the scalar's size against the parameter's, on either path.

    Raises
    ------
    pyopencl.LogicError
        Where OpenCL refuses the argument (its index or size).
    """
    if FAST_SCALARS and isinstance(value, np.generic):
        fast = getattr(kernel, "_set_arg_buf", None)
        if fast is not None:
            fast(index, value)
            return
    kernel.set_arg(index, value)


def call(kernel, queue, global_size: tuple, local_size, *args, wait_for=None):
    """Enqueue ``kernel`` with every one of its arguments, as pyopencl's kernel call does,
    each set by :func:`set_arg` (that call took 24-26 us with two scalar arguments on the
    2-core box, this 3-4 us).

    Parameters
    ----------
    kernel : pyopencl.Kernel
    queue : pyopencl.CommandQueue
    global_size, local_size : tuple of int, or None for ``local_size``
        Work-items in all and per work-group.
    *args
        The kernel's arguments in order, all of them (:func:`set_arg`'s kinds).
    wait_for : list of pyopencl.Event, optional

    Returns
    -------
    pyopencl.Event

    Raises
    ------
    TypeError
        If ``args`` are not as many as the kernel's parameters (checked before any is
        set: a shared kernel object keeps what another caller gave it).
    """
    count = getattr(kernel, "_finepar_num_args", None)
    if count is None:
        count = kernel.num_args
        kernel._finepar_num_args = count
    if len(args) != count:
        raise TypeError(f"kernel {kernel.function_name} takes {count} arguments, "
                        f"{len(args)} given")
    for i, a in enumerate(args):
        set_arg(kernel, i, a)
    return opencl().enqueue_nd_range_kernel(queue, kernel, global_size, local_size,
                                            wait_for=wait_for)


def bind_changed(kernel, args: tuple) -> None:
    """Set ``kernel``'s positional arguments ``args``, only those that changed since
    the last call for this kernel object (buffers by identity, NumPy scalars by type and
    value; the last values ride on the kernel object), as :meth:`Launch.bind` does by
    name: pyopencl's kernel call sets every argument, a few microseconds each.

    Only for kernel objects whose every launch goes through here: an argument set
    elsewhere (a kernel call) is not seen, so the next call here could skip it. The
    remembered buffers stay referenced as long as the kernel object lives: give it no
    longer a life than theirs (:mod:`finepar.apps.bfsranks` keeps one set an engine)."""
    last = getattr(kernel, "_finepar_args", None)
    if last is None or len(last) != len(args):
        last = [UNSET] * len(args)
    for i, a in enumerate(args):
        old = last[i]
        if old is a or (isinstance(a, np.generic) and type(old) is type(a) and old == a):
            continue
        set_arg(kernel, i, a)
        last[i] = a
    kernel._finepar_args = last


#: Each engine's own copy of a kernel object it launches with arguments
#: (:func:`enqueue_bound`): engine -> {id(kernel): (kernel, own copy)}.
_OWN = weakref.WeakKeyDictionary()


def own_kernel(engine, kernel):
    """``engine``'s own copy of ``kernel`` (made at its first use: the same program and
    name), whose arguments only :func:`enqueue_bound` sets: kernel objects shared through
    the device pair are set by every engine and every other caller, so no binding on them
    can be kept. The copy keeps the arguments it was last given (buffers of the engine's
    own, or of its apps': they live until the engine goes or an argument replaces them)."""
    table = _OWN.get(engine)
    if table is None:
        table = _OWN[engine] = {}
    got = table.get(id(kernel))
    if got is None:  # the shared kernel is held too: its id stays its own
        mod = opencl()
        got = table[id(kernel)] = (kernel, mod.Kernel(
            kernel.get_info(mod.kernel_info.PROGRAM), kernel.function_name))
    return got[1]


def enqueue_bound(engine, queue, kernel, global_size: tuple, local_size, args: tuple):
    """Enqueue ``kernel`` with ``args`` on ``queue`` as pyopencl's kernel call does, but on
    ``engine``'s own copy (:func:`own_kernel`) and setting only the arguments that changed
    since its last launch (:func:`bind_changed`): the kernel call set every argument, 30-170
    us a launch on an H200's host where BFS at Graph500 scales 18-22 made 11 such launches a
    run, its device idle between them (``benchmarks/probe_host.py``, 2026-11-28). Returns
    the event."""
    own = own_kernel(engine, kernel)
    bind_changed(own, args)
    return opencl().enqueue_nd_range_kernel(queue, own, global_size, local_size)
