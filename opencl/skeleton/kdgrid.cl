/*
 * The histogram of the K-D grid tiling (finepar/throttle/kdgrid.py, throttling-atc18 §4.1
 * on a grid): per cell of a grid of row ranges (1 << rs rows each) and column ranges
 * (1 << cs columns each), the nonzeros and the rows with an entry in the cell. The GPU
 * already holds, or is about to hold, the matrix; the host would spend seconds of its
 * memory bandwidth on the same pass.
 *
 * One work-item a row of a chunk of rows (its row pointers rebased by `base`); counts by
 * global atomics into the whole grid's counters (gr x gc, row-major). A row's columns are
 * sorted, so its first entry in a column range is the one whose range differs from the
 * previous entry's.
 */
__kernel void kd_histogram(const int rows, const int row0, const long base,
                           __global const long *restrict indptr,
                           __global const int *restrict indices,
                           const int rs, const int cs, const int gc,
                           __global uint *restrict hist, __global uint *restrict rows_in)
{
    const int r = (int)get_global_id(0);
    if (r >= rows) return;
    const long lo = indptr[r] - base, hi = indptr[r + 1] - base;
    const long cell0 = (long)((row0 + r) >> rs) * gc;
    int prev = -1;
    for (long e = lo; e < hi; e++) {
        const int c = indices[e] >> cs;
        atomic_inc(&hist[cell0 + c]);
        if (c != prev) {
            atomic_inc(&rows_in[cell0 + c]);
            prev = c;
        }
    }
}

/*
 * The partitions' distinct columns: every entry's column is marked in the bitmap of the
 * leaf (partition) holding it. Rows are grouped in strips (strips[s] .. strips[s+1]),
 * each crossed by the leaves cover_leaf[cover_ptr[s] ..] in column order, leaf j from
 * column cover_cut[j]; a row's columns are sorted, so its leaf only moves right. Leaf p's
 * column c is bit c - leaf_col0[p] of its bitmap, which starts at word leaf_word[p].
 * Rows marked in `drop` (has_drop) are skipped.
 */
__kernel void kd_distinct(const int rows, const int row0, const long base,
                          __global const long *restrict indptr,
                          __global const int *restrict indices,
                          const int n_strips, __global const int *restrict strips,
                          __global const int *restrict cover_ptr,
                          __global const int *restrict cover_cut,
                          __global const int *restrict cover_leaf,
                          __global const int *restrict leaf_col0,
                          __global const long *restrict leaf_word,
                          const int has_drop, __global const uchar *restrict drop,
                          __global uint *restrict bits)
{
    const int r = (int)get_global_id(0);
    if (r >= rows) return;
    const int row = row0 + r;
    if (has_drop && drop[row]) return;
    int lo_s = 0, hi_s = n_strips;  /* the strip holding the row: strips[s] <= row */
    while (hi_s - lo_s > 1) {
        const int mid = (lo_s + hi_s) >> 1;
        if (strips[mid] <= row) lo_s = mid; else hi_s = mid;
    }
    const int m1 = cover_ptr[lo_s + 1];
    int j = cover_ptr[lo_s];
    const long lo = indptr[r] - base, hi = indptr[r + 1] - base;
    for (long e = lo; e < hi; e++) {
        const int c = indices[e];
        while (j + 1 < m1 && c >= cover_cut[j + 1]) j++;
        const int leaf = cover_leaf[j];
        const int off = c - leaf_col0[leaf];
        atomic_or(&bits[leaf_word[leaf] + (off >> 5)], 1u << (off & 31));
    }
}
