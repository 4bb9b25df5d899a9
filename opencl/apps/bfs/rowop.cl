/* BFS bottom-up step (Beamer et al., SC'12), pull on A^T: an unvisited vertex looks for an
 * in-neighbour on the frontier, a bitmap; the masked (min, second) semiring over int32
 * finds the smallest such id (every mapping picks the same parent) and stops at the first
 * hit of a sequential scan.
 *   x = frontier bitmap (bit v of word v/32), y = parent, s0 = level, s1 = next frontier
 *   bitmap (bits set atomically), aux = out-degree, ia = the frontier's level.
 * Partials: vertices discovered and the sum of their out-degrees (the next frontier's edges,
 * for the direction heuristic). */
#define APP_FRAGMENT
typedef int acc_t;
typedef long part_t;
#define X_DECL __global const uint *restrict x
#define Y_DECL __global int *restrict y
#define S0_DECL __global int *restrict s0
#define S1_DECL __global uint *s1
#define S2_DECL __global const int *restrict s2
#define AUX_DECL __global const int *restrict aux
#define IDENTITY INT_MAX
#define REDUCE(a, b) min((a), (b))
#define IN_FRONTIER(c) ((x[(c) >> 5] >> ((c) & 31)) & 1u)
#define TERM(k) (IN_FRONTIER(indices[k]) ? indices[k] : INT_MAX)
#define SCAN_DONE(acc) ((acc) != INT_MAX)
#define ROW_ACTIVE(r) (s0[r] < 0)
#define NEED_PARTIALS 1
#define EPILOGUE(r, acc)                                    \
    if ((acc) != INT_MAX) {                                 \
        s0[r] = ia + 1;                                     \
        y[r] = (acc);                                       \
        atomic_or(&s1[(r) >> 5], 1u << ((r) & 31));         \
        p0 += 1;                                            \
        p1 += aux[r];                                       \
    }
/* CHAIN (with STOP_FLAG): bottom-up steps chained on one device (finepar/apps/bfs.py,
 * BFS.pull_chain). After each step the reduction tests Beamer's switch back to top-down on
 * the step's sums and stops the chain's later steps (they return at once):
 *   stop once the new frontier is empty, or holds fewer vertices than fscal[0] (int bits:
 *   ceil(n / beta); 0 never) and fewer than the frontier the step read (fscal[1], int bits,
 *   then set to the new frontier's size). Stop is only ever raised: a stopped step's
 *   reduction (of the last real step's partials again) changes nothing. */
#ifdef CHAIN
#define FINISH(out)                                                         \
    {                                                                       \
        __global int *chain_ = (__global int *)fscal;                       \
        const long size_ = (out)[0];                                        \
        if (size_ == 0 || (size_ < chain_[0] && size_ < chain_[1])) stop[0] = 1; \
        chain_[1] = (int)size_;                                             \
    }
#endif
