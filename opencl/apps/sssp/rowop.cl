/* Single-source shortest paths, pull step of frontier Bellman-Ford on A^T: the (min, +)
 * semiring over float32, in place:
 *     dist[r] <- min(dist[r], min_{u -> r} dist[u] + w(u, r))
 * (x and y are the same vector: a row may read values its in-neighbours lowered in this very
 * step, which only speeds convergence; every value is still the length of a path).
 *   x = y = dist (INFINITY unreached), s0 = stamp (a changed row gets the round ia),
 *   aux = out-degree in A;  weights: the matrix values (data), or their magnitudes with
 *   -D ABS_WEIGHTS; a pattern matrix (HAS_DATA=0) has length 1 everywhere, read from no
 *   array.
 *   fscal[0] = the step's bound b (finepar/apps/sssp.py): no improvement this step can be
 *   below b (b = fl(m + least length), m a lower bound on the distances of the vertices
 *   whose out-edges are not yet relaxed), so a row at or below b is skipped and a row's
 *   scan stops once its minimum reaches b (the bottom-up BFS's stop at the first frontier
 *   in-neighbour, where every length is one); -INFINITY scans every entry.
 * Partials: rows changed, and their out-degrees (the next frontier's edges). */
#define APP_FRAGMENT
typedef float acc_t;
typedef long part_t;
#define X_DECL __global const float *x
#define Y_DECL __global float *y
#define S0_DECL __global int *restrict s0
#define S1_DECL __global int *restrict s1
#define S2_DECL __global const int *restrict s2
#define AUX_DECL __global const int *restrict aux
#define IDENTITY INFINITY
#define REDUCE(a, b) fmin((a), (b))
#if defined(HAS_DATA) && !HAS_DATA
#define WEIGHT(k) 1.0f
#elif defined(ABS_WEIGHTS)
#define WEIGHT(k) fabs(data[k])
#else
#define WEIGHT(k) (data[k])
#endif
#define TERM(k) (x[indices[k]] + WEIGHT(k))
#define PULL_BOUND (fscal[0])
#define ROW_ACTIVE(r) (y[r] > PULL_BOUND)
#define SCAN_DONE(acc) ((acc) <= PULL_BOUND)
#define NEED_PARTIALS 1
#define EPILOGUE(r, acc)                                    \
    if ((acc) < y[r]) {                                     \
        y[r] = (acc);                                       \
        s0[r] = ia;                                         \
        p0 += 1;                                            \
        p1 += aux[r];                                       \
    }
