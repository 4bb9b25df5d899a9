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
