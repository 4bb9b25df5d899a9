"""Load, validate, convert and save graphs and sparse matrices.

Every graph FinePar runs on is a :class:`Graph`: a square matrix in CSR form
with int32 ``indices``, float32 ``data`` and an ``indptr`` that is int32 up to
2,147,483,647 stored entries and int64 beyond (:func:`finepar.graph.as_indptr`),
column indices sorted within each row and no duplicate entries. Row ``i`` lists
the out-edges of vertex ``i`` (``A[i, j] != 0`` means an edge ``i -> j``).

Input formats (chosen by file name, case-insensitive)
-----------------------------------------------------
``.mtx``, ``.mtx.gz``
    Matrix Market coordinate files: ``general``, ``symmetric`` and
    ``skew-symmetric`` storage; ``real``, ``integer`` and ``pattern`` fields.
    Read with ``fast_matrix_market``. Symmetric storage is expanded (the
    diagonal once; skew-symmetric mirrors are negated). Duplicate entries are
    summed (collapsed to one entry for ``pattern``).
``.txt``, ``.tsv``, ``.edges``, ``.el`` (each optionally ``.gz``)
    SNAP-style edge lists: ``src dst`` integer vertex ids per line, separated
    by blanks or tabs, optionally followed by a numeric edge weight (a third
    column makes a valued graph; further columns are ignored with a note); every
    line has the same number of columns. Blank lines are skipped and ``#`` or
    ``%`` starts a comment that runs to the end of the line. Ids are compacted
    to ``0 .. n-1`` in increasing order (the original ids are kept in
    :attr:`Graph.ids` when that changed anything); duplicate edges are removed
    (weights summed); self-loops are kept.
``out.NAME``, ``out.NAME.gz``
    KONECT edge lists: ``%`` header lines (``% sym|asym WEIGHTS`` then,
    optionally, ``% EDGES N N``), then 1-based ``src dst [weight [timestamp]]``
    lines. Vertex ``k`` is row ``k - 1``; ``n`` is the header's vertex count
    (else the largest id). ``% sym`` means undirected, each edge listed once:
    both directions are stored (noted). ``unweighted`` networks are pattern
    graphs whatever columns follow the ids; otherwise the third column is the
    weight. Timestamps and other extra columns are ignored with a note.
``.edgelist``, ``.edgelist.gz``
    networkx edge lists: :func:`networkx.write_edgelist` (``u v {'weight': 2.0}``,
    ``u v {}``, or ``u v`` with ``data=False``) and
    :func:`networkx.write_weighted_edgelist` (``u v 2.0``) output, ``#``
    comments. Node labels must be integers (negative ones too); they are
    compacted like SNAP ids. A ``weight`` attribute gives the values (edges
    without one weigh 1); other attributes are ignored with a note. The
    attribute dicts are read by a small parser (no ``eval``). Each line is one
    directed edge ``u -> v``.
``.graph``, ``.graph.gz``
    METIS graphs: a header ``n m [fmt [ncon]]`` (``fmt`` up to three 0/1 digits:
    vertex sizes, vertex weights, edge weights), ``%`` comment lines, then one
    line per vertex (blank for a vertex with no neighbours) with its 1-based
    neighbours, each followed by its weight when ``fmt`` ends in 1. Edge
    weights become the values; vertex sizes and weights are skipped with a note.
    The graph is undirected: the adjacency must be symmetric (with equal
    weights both ways), hold no self-loops or repeated neighbours, and list
    ``2 m`` neighbours in all.
``.mat``
    MATLAB files (version 4 to 7.2, read with :func:`scipy.io.loadmat`): the
    ``A`` of a SuiteSparse ``Problem`` struct (its ``Zeros`` pattern, when
    present, added back as explicit zeros, as in the collection's Matrix Market
    files), or else the only sparse matrix in the file. Logical sparse
    matrices are pattern graphs. Where the OS can fork, the file is read in a
    child process: scipy's reader crashes the interpreter on some damaged
    files, and such a crash becomes an InputError.
``.npz``
    A sparse matrix written by :func:`save` or by
    :func:`scipy.sparse.save_npz` (any format).

Values: Matrix Market ``real``/``integer`` values, edge-list and METIS weights
become float32. Pattern inputs (pattern Matrix Market, unweighted edge lists,
METIS graphs without edge weights, logical ``.mat`` matrices) get ``data`` all
ones and ``pattern=True``. Explicit zeros are kept as stored entries unless
``drop_zeros=True``; either way a note says how many there were. Every
transformation the loader applies is recorded, one line each, in
:attr:`Graph.notes`.

Sizes and memory
----------------
:func:`load` learns the vertex count ``n`` and an upper bound on the stored
entries ``nnz`` as early as the format allows (the Matrix Market size line,
the METIS header, the ``.npz`` array headers; ``.mat`` files once read; edge
lists once parsed), before it builds any CSR array. It then calls the caller's
``check_size(n, nnz)`` and estimates the host memory the load needs (about 24
bytes per vertex plus, per entry, the format's parse and sort buffers: see
:func:`load_memory`), refusing to start when that exceeds the memory
available (:func:`available_memory`).

Checks
------
Every problem below raises :class:`~finepar.errors.InputError` whose message is
a single line naming the file (or the in-memory object) and the problem;
nothing is written anywhere.

* file missing, a directory, or unreadable;
* unknown file name (the message lists the supported ones);
* malformed Matrix Market: bad banner, bad size line (also a negative or
  overflowing size), too few or too many entries, a non-numeric token, an
  entry index outside the declared size or too large to be read
  (``fast_matrix_market``'s message, prefixed ``malformed Matrix Market:``),
  more entries declared than the file can hold, a NUL byte; dense ``array``
  files and ``vector`` objects;
* corrupt gzip stream;
* complex-valued Matrix Market or sparse matrix (unsupported);
* a matrix that is not square (``matrix is not square (R x C)``);
* an index out of range: negative or ``>= n`` in :func:`from_csr`, or outside
  the declared size in a Matrix Market file; the first bad position is named;
* a NaN or infinite value (``value at row i, column j is NaN``; ``line N:
  weight ...`` in edge lists), or a finite value too large for float32; Matrix
  Market positions are 1-based as in the file, in-memory positions 0-based;
* more vertices than int32 column indices can address (2,147,483,647); there
  is no limit on stored entries (``indptr`` becomes int64 past the int32 limit);
* a load that needs more memory than is available (``loading needs about
  X GiB ... but Y GiB is available``); whatever ``check_size`` raises;
* an empty graph: 0 vertices, or 0 stored entries (also after
  ``drop_zeros``);
* edge lists (``line N: ...``): a line with one field, lines with different
  numbers of columns (``line N has 3 columns but line M has 2``), an id that
  is not an integer, a negative or overflowing id, a weight that is not a
  number, a file with no edges; KONECT: a missing or bipartite header, id 0
  or above the header's vertex count, an edge count that differs from the
  header's; networkx: a non-integer node label, an unclosed or misplaced
  attribute dict, a ``weight`` that is not a number;
* METIS (``line N: ...``): a header that is not ``n m [fmt [ncon]]``, more
  edges declared than the file can hold, a vertex line whose field count does
  not fit ``fmt``, too few or too many vertex lines, a neighbour outside
  ``1..n``, a self-loop, a repeated neighbour, an edge listed on one endpoint's
  line only, different weights on the two lines, ``2 m`` not matching the
  neighbours listed;
* ``.mat``: not a MAT-file, MATLAB v7.3 (HDF5) files, no sparse matrix, several
  sparse matrices and no ``Problem`` struct, a ``Problem`` whose ``A`` is
  missing or not sparse;
* a ``.npz`` file that is not a zip archive or not a scipy sparse matrix;
* in :func:`from_csr`: ``indptr`` of the wrong length, not starting at 0,
  decreasing, or not ending at ``len(indices)``; ``data`` of the wrong length.

All conversions are vectorised (no Python loop over rows or edges) and keep
int32 index arrays wherever the values fit.
"""

from __future__ import annotations

from ..graph import INT32_MAX, Graph
from .construct import from_csr, from_edges, from_scipy
from .context import available_memory, load_memory
from .formats import SUPPORTED_SUFFIXES, load, save
from .validate import validate

__all__ = [
    "Graph",
    "load",
    "save",
    "validate",
    "from_scipy",
    "from_csr",
    "from_edges",
    "available_memory",
    "load_memory",
    "INT32_MAX",
    "SUPPORTED_SUFFIXES",
]
