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
