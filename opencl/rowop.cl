/*
 * FinePar's one row operation (DESIGN.md §2, throttling-atc18 §2.1):
 *
 *     acc_r = REDUCE_{k in row r} COMBINE(A_rk, x_k)       for every r in a row list,
 *
 * fused with the app's per-row epilogue (write y_r, update state, accumulate
 * the work-group's two partial sums used for convergence tests).
 *
 * One source, specialised by -D options so that pyopencl's on-disk cache keys
 * each variant correctly:
 *   APP_SPMV | APP_PAGERANK | APP_BFS | APP_CC   the semiring and epilogue
 *   MAPPING=0  one work-item per row          (short rows)
 *   MAPPING=1  a team of LANES work-items     (sub-group sized; medium rows)
 *   MAPPING=2  one work-group per row         (long rows)
 *   WG        work-group size (power of two)
 *   LANES     team size for MAPPING=1 (power of two dividing WG)
 *   COMPACT   1: indptr is indexed by the row's position in this device's share
 *             (split memory, a compacted CSR); 0: by its global row id (shared CSR)
 *   HAS_DATA  1: multiply by A_rk (SpMV); 0: pattern (graph apps)
 *
 * Kernel arguments are the same for every app; unused buffers get a dummy.
 *   nrows, base      rows in this launch; their first position in the share
 *   row_ids          the share's global row ids in launch order; this launch
 *                    runs row_ids[base .. base + nrows)
 *   indptr, indices, data   CSR (int32 / int32 / float32)
 *   x                the vector read through column indices
 *   y, s0, s1, aux   app vectors, indexed by global row id
 *   fa, fb, ia       scalars (PageRank: base term, damping; BFS: current level)
 *   partials         two PART_T per work-group, at 2*(part_offset + group)
 */

#ifndef WG
#error "WG must be defined"
#endif
#ifndef MAPPING
#define MAPPING 0
#endif
#ifndef COMPACT
#define COMPACT 0
#endif
#ifndef HAS_DATA
#define HAS_DATA 0
#endif

#if MAPPING == 0
#define TEAM 1
#elif MAPPING == 1
#ifndef LANES
#error "MAPPING=1 needs LANES"
#endif
#define TEAM LANES
#else
#define TEAM WG
#endif

/* ---------------------------------------------------------------- semirings */
#if defined(APP_SPMV)
/* (+, x) over float32: y = A x */
typedef float acc_t;
typedef float part_t;
#define X_DECL __global const float *restrict x
#define Y_DECL __global float *restrict y
#define S0_DECL __global const float *restrict s0
#define S1_DECL __global float *restrict s1
#define AUX_DECL __global const float *restrict aux
#define IDENTITY 0.0f
#define REDUCE(a, b) ((a) + (b))
#define NEED_PARTIALS 0
#define ROW_ACTIVE(r) 1
#if HAS_DATA
#define SCAN(acc, k0, k1, step) \
    for (int k = (k0); k < (k1); k += (step)) acc += data[k] * x[indices[k]];
#else
#define SCAN(acc, k0, k1, step) \
    for (int k = (k0); k < (k1); k += (step)) acc += x[indices[k]];
#endif
#define EPILOGUE(r, acc, len) y[r] = (acc);

#elif defined(APP_PAGERANK)
/* (+, second) over float32, pull form on A^T:
 *   x = contrib (pr/outdeg), y = pr_next, s0 = pr_cur, s1 = contrib_next,
 *   aux = 1/outdeg (0 for dangling vertices), fa = (1-d)/n + d*dangling/n, fb = d.
 * partials: |pr_next - pr_cur| and the dangling mass of pr_next. */
typedef float acc_t;
typedef float part_t;
#define X_DECL __global const float *restrict x
#define Y_DECL __global float *restrict y
#define S0_DECL __global const float *restrict s0
#define S1_DECL __global float *restrict s1
#define AUX_DECL __global const float *restrict aux
#define IDENTITY 0.0f
#define REDUCE(a, b) ((a) + (b))
#define NEED_PARTIALS 1
#define ROW_ACTIVE(r) 1
#define SCAN(acc, k0, k1, step) \
    for (int k = (k0); k < (k1); k += (step)) acc += x[indices[k]];
#define EPILOGUE(r, acc, len) {                         \
        const float pr_ = fa + fb * (acc);              \
        const float io_ = aux[r];                       \
        p0 += fabs(pr_ - s0[r]);                        \
        p1 += (io_ == 0.0f) ? pr_ : 0.0f;               \
        y[r] = pr_;                                     \
        s1[r] = pr_ * io_;                              \
    }

#elif defined(APP_BFS)
/* Masked (min, second) on A^T, bottom-up: an unvisited row r looks for an
 * in-neighbour on the frontier (level == ia); with sorted indices the first
 * hit is the smallest such id, so every mapping picks the same parent.
 *   x = level (in place), y = parent, aux = out-degree.
 * partials: vertices discovered, and the sum of their out-degrees. */
typedef int acc_t;
typedef int part_t;
#define X_DECL __global int *restrict x
#define Y_DECL __global int *restrict y
#define S0_DECL __global const float *restrict s0
#define S1_DECL __global float *restrict s1
#define AUX_DECL __global const int *restrict aux
#define IDENTITY INT_MAX
#define REDUCE(a, b) min((a), (b))
#define NEED_PARTIALS 1
#define ROW_ACTIVE(r) (x[r] < 0)
#define SCAN(acc, k0, k1, step)                              \
    for (int k = (k0); k < (k1); k += (step)) {              \
        const int c_ = indices[k];                           \
        if (x[c_] == ia) { acc = c_; break; }                \
    }
#define EPILOGUE(r, acc, len)                                \
    if ((acc) != INT_MAX) {                                  \
        x[r] = ia + 1;                                       \
        y[r] = (acc);                                        \
        p0 += 1;                                             \
        p1 += aux[r];                                        \
    }

#elif defined(APP_CC)
/* (min, second) on the symmetrised graph: label propagation, in place.
 *   x = label, y = stamp (iteration in which the label last fell), ia = iteration.
 * partials: rows whose label fell, and their degrees (active edges). */
typedef int acc_t;
typedef int part_t;
#define X_DECL __global int *restrict x
#define Y_DECL __global int *restrict y
#define S0_DECL __global const float *restrict s0
#define S1_DECL __global float *restrict s1
#define AUX_DECL __global const float *restrict aux
#define IDENTITY INT_MAX
#define REDUCE(a, b) min((a), (b))
#define NEED_PARTIALS 1
#define ROW_ACTIVE(r) 1
#define SCAN(acc, k0, k1, step) \
    for (int k = (k0); k < (k1); k += (step)) acc = min(acc, x[indices[k]]);
#define EPILOGUE(r, acc, len)                                \
    if ((acc) < x[r]) {                                      \
        x[r] = (acc);                                        \
        y[r] = ia;                                           \
        p0 += 1;                                             \
        p1 += (len);                                         \
    }
#else
#error "define one of APP_SPMV, APP_PAGERANK, APP_BFS, APP_CC"
#endif

#define ROWOP_ARGS                                                           \
    const int nrows, const int base,                                         \
    __global const int *restrict row_ids,                                    \
    __global const int *restrict indptr,                                     \
    __global const int *restrict indices,                                    \
    __global const float *restrict data,                                     \
    X_DECL, Y_DECL, S0_DECL, S1_DECL, AUX_DECL,                              \
    const float fa, const float fb, const int ia,                            \
    __global part_t *restrict partials, const int part_offset

/* Work-group sum of (p0, p1) into partials[2*(part_offset + group) + {0,1}]. */
#if NEED_PARTIALS
#define WG_PARTIALS(p0, p1)                                                  \
    {                                                                        \
        lp0[lid] = (p0);                                                     \
        lp1[lid] = (p1);                                                     \
        for (int s_ = WG / 2; s_ > 0; s_ >>= 1) {                            \
            barrier(CLK_LOCAL_MEM_FENCE);                                    \
            if (lid < s_) {                                                  \
                lp0[lid] += lp0[lid + s_];                                   \
                lp1[lid] += lp1[lid + s_];                                   \
            }                                                                \
        }                                                                    \
        if (lid == 0) {                                                      \
            const int g_ = 2 * (part_offset + (int)get_group_id(0));         \
            partials[g_] = lp0[0];                                           \
            partials[g_ + 1] = lp1[0];                                       \
        }                                                                    \
    }
#define PARTIAL_LOCALS __local part_t lp0[WG]; __local part_t lp1[WG];
#else
#define WG_PARTIALS(p0, p1)
#define PARTIAL_LOCALS
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rowop(ROWOP_ARGS)
{
    PARTIAL_LOCALS
    const int lid = (int)get_local_id(0);
    part_t p0 = 0, p1 = 0;
#if TEAM == 1
    /* MAPPING 0: one work-item per row */
    const int j = (int)get_global_id(0);
    if (j < nrows) {
        const int r = row_ids[base + j];
        const int p = COMPACT ? base + j : r;
        if (ROW_ACTIVE(r)) {
            const int k0 = indptr[p], k1 = indptr[p + 1];
            acc_t acc = IDENTITY;
            SCAN(acc, k0, k1, 1)
            EPILOGUE(r, acc, k1 - k0)
        }
    }
#else
    /* MAPPING 1 / 2: TEAM work-items per row, strided scan, tree reduction */
    __local acc_t lacc[WG];
    const int lane = lid & (TEAM - 1);
    const int j = (int)get_group_id(0) * (WG / TEAM) + lid / TEAM;
    int r = 0, k0 = 0, k1 = 0;
    int active = 0;
    acc_t acc = IDENTITY;
    if (j < nrows) {
        r = row_ids[base + j];
        const int p = COMPACT ? base + j : r;
        active = ROW_ACTIVE(r);
        if (active) {
            k0 = indptr[p];
            k1 = indptr[p + 1];
            SCAN(acc, k0 + lane, k1, TEAM)
        }
    }
    lacc[lid] = acc;
    for (int s = TEAM / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lane < s) lacc[lid] = REDUCE(lacc[lid], lacc[lid + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && active) {
        acc = lacc[lid];
        EPILOGUE(r, acc, k1 - k0)
    }
#endif
    WG_PARTIALS(p0, p1)
}

/* Second stage: sum n pairs of partials into out[0], out[1] (one work-group). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce_partials(const int n, __global const part_t *restrict partials,
                     __global part_t *restrict out)
{
    __local part_t lp0[WG];
    __local part_t lp1[WG];
    const int lid = (int)get_local_id(0);
    part_t p0 = 0, p1 = 0;
    for (int i = lid; i < n; i += WG) {
        p0 += partials[2 * i];
        p1 += partials[2 * i + 1];
    }
    lp0[lid] = p0;
    lp1[lid] = p1;
    for (int s = WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            lp0[lid] += lp0[lid + s];
            lp1[lid] += lp1[lid + s];
        }
    }
    if (lid == 0) {
        out[0] = lp0[0];
        out[1] = lp1[0];
    }
}
