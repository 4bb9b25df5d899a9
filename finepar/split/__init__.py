"""Where the CPU/GPU split is decided (DESIGN.md §3, "split"), in one package.

* :mod:`~finepar.split.choose`: what a run decides before its first step, in order: the
  devices (``auto``: the CPU alone on an emulated pair), the plan (one device, a given
  ``T_f``, or the tuner's), the GPU share's throttling, and the measured correction of a
  tuned split;
* :mod:`~finepar.split.tuner`: §3.4's hill climbing over ``T_f`` and the grouping, on
  the performance models' predictions, against each device alone;
* :mod:`~finepar.split.answer`: the whole-run choice: the CPU alone, the GPU alone or the
  split, by predicted (a small frontier app: measured) time to answer;
* :mod:`~finepar.split.perfmodel`: §3.3's per-platform models of each device's
  throughput on a share, and the launch and transfer costs;
* :mod:`~finepar.split.calibrate`: which model a run uses, measured on first use where
  none matches the devices;
* :mod:`~finepar.split.training`: the measurements the models are fitted on
  (``finepar train``).

The plan itself (:class:`finepar.partition.Plan`) lies below the engine; the cache-fit
partitions of the GPU share are :mod:`finepar.throttle`'s.
"""
