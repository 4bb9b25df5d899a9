/*
 * Frontier steps of one device (FinePar TKDE §4.2; Beamer et al. SC'12 for BFS's top-down
 * step): the frontier is a vertex list on the device, never extracted on the host.
 *
 * A list carries the exclusive prefix sums of its vertices' out-degrees (`offs`), made as
 * it is built: appends add to the list's 64-bit tally, whose high bits count the vertices
 * and whose low EDGE_BITS sum their out-degrees (one atomic add an append, or on the GPU
 * one a work-group pass: AGG_APPENDS below). The old tally gives the vertex its slot and
 * its offset at once, so the offsets are in list order, with no scan and no host round
 * trip.
 *
 * Levels run in batches with the stop test on the device. The tallies of a batch's lists
 * sit in one buffer (`tallies[STATE + j]`: list j, the current list at j = 0, after
 * STATE words of app state): level j reads its list's size and edges from there, so the
 * host enqueues many levels without reading anything and reads the buffer once per batch.
 * A level whose list is empty does nothing; a level the app's limit refuses (the frontier
 * has grown past what one device should push: `refuses`) writes REFUSED into the next
 * entry, and every later level of the batch passes the mark on. The host reads where the
 * batch stopped and why.
 *
 * `advance` is load-balanced over edges (Merrill et al., PPoPP'12; Gunrock's LB advance):
 * work-item e takes edge e of the frontier's out-edges, found by a binary search in
 * `offs`, so a hub in a small frontier spreads over many work-items; the grid is fixed
 * when the batch is enqueued and strides over however many edges the level has.
 * `advance_local` is one work-group that runs level after level on lists kept in local
 * memory (a work-group-local queue, barriers between levels) while they fit (QCAP
 * vertices, ELOCAL edges): a deep graph with small frontiers (a road network) runs
 * hundreds of levels in one launch.
 *
 * The app's fragment (concatenated before this file) defines
 *   ADVANCE_ARGS          its extra arguments
 *   ADVANCE_EDGE(u, k, v) what edge k (u -> v) does at level `it`; it may append v to the
 *                         next list with PUSH_NEXT(v)
 *   LOCAL_REFILL          optional: statements advance_local runs when its list is empty,
 *                         which may append to it with PUSH_NEXT (SSSP's far pile), and
 *   LOCAL_DECLS           the __local variables they need
 *   OFFSET_T              int | long: type of indptr and of the offsets
 *   EDGE_BITS             bits of the tally that sum out-degrees (the rest count vertices)
 *   LWG, QCAP, ELOCAL     advance_local's work-group size and list capacity (vertices,
 *                         edges); without LWG there is no advance_local
 * The queue kernels convert between a vertex list and the marks a pull step leaves.
 */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifndef OFFSET_T
#define OFFSET_T int
#endif
#ifndef EDGE_BITS
#define EDGE_BITS 36
#endif
#ifndef STATE
#define STATE 4
#endif

#define EDGE_MASK (((ulong)1 << EDGE_BITS) - 1)
#define TALLY_SIZE(t) ((int)((t) >> EDGE_BITS))
#define TALLY_EDGES(t) ((OFFSET_T)((t) & EDGE_MASK))
/* Marks written into the next list's tally entry by a level that stops a batch: REFUSED
 * (the app's limit: the host should pull), PAUSED (advance_local stopped with work left). */
#define REFUSED (~(ulong)0)
#define PAUSED (~(ulong)1)
#define IS_MARK(t) ((t) >= PAUSED)

/* The arguments of a kernel that appends to a list (the list's tally at tallies[STATE + j]). */
#define NEXT_ARGS __global int *restrict next, __global OFFSET_T *restrict next_offs, \
                  __global ulong *tallies

/* Append v (its out-degree from indptr) to the list whose tally `tally` points to. */
#define PUSH_GLOBAL(v) {                                                            \
        const ulong o_ = atom_add(tally, ((ulong)1 << EDGE_BITS)                    \
                                  | (ulong)(indptr[(v) + 1] - indptr[v]));          \
        const uint p_ = (uint)(o_ >> EDGE_BITS);                                    \
        next[p_] = (v);                                                             \
        next_offs[p_] = (OFFSET_T)(o_ & EDGE_MASK);                                 \
    }
#define PUSH_NEXT(v) PUSH_GLOBAL(v)

/* Work-group-aggregated appends (Merrill et al., PPoPP'12; AGG_APPENDS, the GPU role's
 * programs): in `advance` and the queue kernels every work-item of a work-group runs the
 * same passes; in a pass each appends at most one vertex, counted on a local tally
 * (AGG_PUSH: its slot and edge offset within the work-group's appends), and one work-item
 * adds the pass's total to the list's tally at once (AGG_END), so a level that appends
 * from a million work-items to one list does not serialise them on one global atomic (a
 * hub's level, or the list made from a big bottom-up level's marks). The app's
 * ADVANCE_EDGE appends at most once an edge. Without AGG_APPENDS (a CPU: a few cores
 * contend little) every append is one global atomic, and the passes have no barriers. */
#ifdef AGG_APPENDS
#define AGG_DECLS __local ulong agg_tally_, agg_base_;
#define AGG_START { if (get_local_id(0) == 0) agg_tally_ = 0; barrier(CLK_LOCAL_MEM_FENCE); }
#define AGG_PASS int agg_v_ = -1; ulong agg_o_ = 0;
#define AGG_PUSH(v) {                                                               \
        agg_v_ = (v);                                                               \
        agg_o_ = atom_add(&agg_tally_, ((ulong)1 << EDGE_BITS)                      \
                          | (ulong)(indptr[(v) + 1] - indptr[v]));                  \
    }
#define AGG_END(tally) {                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                               \
        if (get_local_id(0) == 0) {                                                 \
            const ulong s_ = agg_tally_;                                            \
            agg_base_ = s_ ? atom_add((tally), s_) : 0;                             \
            agg_tally_ = 0;                                                         \
        }                                                                           \
        barrier(CLK_LOCAL_MEM_FENCE);                                               \
        if (agg_v_ >= 0) {                                                          \
            const ulong o_ = agg_base_ + agg_o_;                                    \
            next[(uint)(o_ >> EDGE_BITS)] = agg_v_;                                 \
            next_offs[(uint)(o_ >> EDGE_BITS)] = (OFFSET_T)(o_ & EDGE_MASK);        \
        }                                                                           \
    }
#else
#define AGG_DECLS
#define AGG_START
#define AGG_PASS
#define AGG_PUSH(v) PUSH_GLOBAL(v)
#define AGG_END(tally)
#endif

/* The app's limit on level j's list of `edges` out-edges: refused when j >= check_from,
 * edges > min_edges and edges * edge_factor > budget - spent (edge_factor 0: never). */
int refuses(const int j, const OFFSET_T edges, const float edge_factor, const long budget,
            const long spent, const long min_edges, const int check_from)
{
    return edge_factor > 0.0f && j >= check_from && (long)edges > min_edges
        && (float)edges * edge_factor > (float)(budget - spent);
}

/* The edges of lists 1..j of a batch (what its levels found), for a limit that decays. */
long found_edges(__global const ulong *tallies, const int j)
{
    long s = 0;
    for (int i = 1; i <= j; ++i) s += (long)TALLY_EDGES(tallies[STATE + i]);
    return s;
}

#define LIMIT_ARGS const float edge_factor, const long budget, const int decay, \
                   const long min_edges, const int check_from

#ifdef ADVANCE_EDGE
/* Level j of a batch (level `it` of the run): list j (front, offs) -> list j + 1 (next),
 * its appends aggregated per work-group (AGG_APPENDS). */
#undef PUSH_NEXT
#define PUSH_NEXT(v) AGG_PUSH(v)
__kernel void advance(const int j, __global const int *restrict front,
                      __global const OFFSET_T *restrict offs,
                      __global const OFFSET_T *restrict indptr,
                      __global const int *restrict indices, NEXT_ARGS, const int it,
                      LIMIT_ARGS, ADVANCE_ARGS)
{
    AGG_DECLS
    const ulong t = tallies[STATE + j];
    __global ulong *tally = tallies + STATE + j + 1;
    /* no return before the passes' barriers: a level with nothing to do runs no pass */
    int nfront = 0;
    OFFSET_T total = 0;
    if (IS_MARK(t)) {
        if (get_global_id(0) == 0) *tally = t;
    } else {
        nfront = TALLY_SIZE(t);
        total = nfront ? TALLY_EDGES(t) : 0;
        if (nfront && refuses(j, total, edge_factor, budget,
                              decay ? found_edges(tallies, j) : 0, min_edges, check_from)) {
            if (get_global_id(0) == 0) *tally = REFUSED;
            total = 0;
        }
    }
    AGG_START
    const OFFSET_T stride = (OFFSET_T)get_global_size(0);
    const OFFSET_T lane = (OFFSET_T)get_local_id(0);
    /* passes uniform over the work-group: edge e0 + lane of each */
    for (OFFSET_T e0 = (OFFSET_T)(get_global_id(0) - lane); e0 < total; e0 += stride) {
        const OFFSET_T e = e0 + lane;
        AGG_PASS
        if (e < total) {
            int lo = 0, hi = nfront - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) >> 1;
                if (offs[mid] <= e) lo = mid; else hi = mid - 1;
            }
            const int u = front[lo];
            const OFFSET_T k = indptr[u] + (e - offs[lo]);
            const int v = indices[k];
            ADVANCE_EDGE(u, k, v)
        }
        AGG_END(tally)
    }
}
#undef PUSH_NEXT
#define PUSH_NEXT(v) PUSH_GLOBAL(v)

#ifdef LWG
#ifndef QCAP
#define QCAP 2048
#endif
#ifndef ELOCAL
#define ELOCAL (16 * LWG)
#endif
/* Append v to the work-group's next list (slot >= QCAP: straight to the global list, which
 * the host continues from when the list outgrows local memory). */
#undef PUSH_NEXT
#define PUSH_NEXT(v) {                                                              \
        const ulong o_ = atom_add(&ltally[nx], ((ulong)1 << EDGE_BITS)              \
                                  | (ulong)(indptr[(v) + 1] - indptr[v]));          \
        const uint p_ = (uint)(o_ >> EDGE_BITS);                                    \
        const OFFSET_T f_ = (OFFSET_T)(o_ & EDGE_MASK);                             \
        if (p_ < QCAP) { lq[nx][p_] = (v); loffs[nx][p_] = f_; }                    \
        else { next[p_] = (v); next_offs[p_] = f_; }                                \
    }

/* Levels it0, it0 + 1, ... of one work-group on local lists, from list 0 (front, offs;
 * at most QCAP vertices and ELOCAL edges), until a list is empty, is refused by the
 * limit, outgrows local memory, or max_levels have run. Each level's list tally goes to
 * tallies[STATE + j]; a list left to the host is written to (next, next_offs), with
 * PAUSED or REFUSED in the entry after its tally. */
__kernel __attribute__((reqd_work_group_size(LWG, 1, 1)))
void advance_local(const int max_levels, __global const int *restrict front,
                   __global const OFFSET_T *restrict offs,
                   __global const OFFSET_T *restrict indptr,
                   __global const int *restrict indices, NEXT_ARGS, const int it0,
                   LIMIT_ARGS, ADVANCE_ARGS)
{
    __local int lq[2][QCAP];
    __local OFFSET_T loffs[2][QCAP];
    __local ulong ltally[2];
#ifdef LOCAL_DECLS
    LOCAL_DECLS
#endif
    const int lid = (int)get_local_id(0);
    ulong t = tallies[STATE];
    int cur = 0, nx = 1, j = 0;
    long spent = 0;
    if (IS_MARK(t) || TALLY_SIZE(t) > QCAP || TALLY_EDGES(t) > ELOCAL) {
        for (int i = lid; !IS_MARK(t) && i < TALLY_SIZE(t); i += LWG) {
            next[i] = front[i];
            next_offs[i] = offs[i];
        }
        if (lid == 0) tallies[STATE + 1] = PAUSED;
        return;
    }
    for (int i = lid; i < TALLY_SIZE(t); i += LWG) {
        lq[0][i] = front[i];
        loffs[0][i] = offs[i];
    }
    if (lid == 0) ltally[0] = t;
    for (;;) {
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        const int it = it0 + j;
#ifdef LOCAL_REFILL
        if (TALLY_SIZE(t) == 0) {
            nx = cur;  /* the refill appends to the current list */
            LOCAL_REFILL
            barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
            t = ltally[cur];
            if (lid == 0) tallies[STATE + j] = t;
            nx = cur ^ 1;
        }
#endif
        const int size = TALLY_SIZE(t);
        const OFFSET_T total = TALLY_EDGES(t);
        if (size == 0) return;
        if (size > QCAP || total > ELOCAL) {
            /* list j outgrew local memory: its slots past QCAP are in `next` already */
            for (int i = lid; i < min(size, QCAP); i += LWG) {
                next[i] = lq[cur][i];
                next_offs[i] = loffs[cur][i];
            }
            if (lid == 0) tallies[STATE + j + 1] = PAUSED;
            return;
        }
        if (j == max_levels || refuses(j, total, edge_factor, budget, decay ? spent : 0,
                                       min_edges, check_from)) {
            for (int i = lid; i < size; i += LWG) {
                next[i] = lq[cur][i];
                next_offs[i] = loffs[cur][i];
            }
            if (lid == 0) tallies[STATE + j + 1] = (j == max_levels) ? PAUSED : REFUSED;
            return;
        }
        if (lid == 0) ltally[nx] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (OFFSET_T e = lid; e < total; e += LWG) {
            int lo = 0, hi = size - 1;
            while (lo < hi) {
                const int mid = (lo + hi + 1) >> 1;
                if (loffs[cur][mid] <= e) lo = mid; else hi = mid - 1;
            }
            const int u = lq[cur][lo];
            const OFFSET_T k = indptr[u] + (e - loffs[cur][lo]);
            const int v = indices[k];
            ADVANCE_EDGE(u, k, v)
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        t = ltally[nx];
        ++j;
        cur = nx;
        nx = cur ^ 1;
        if (lid == 0) tallies[STATE + j] = t;
        spent += (long)TALLY_EDGES(t);
    }
}
#undef PUSH_NEXT
#define PUSH_NEXT(v) PUSH_GLOBAL(v)
#endif  /* LWG */
#endif  /* ADVANCE_EDGE */

/* The current list (tallies[STATE], zeroed before) <- every vertex set in bm (the frontier
 * a bottom-up step found); appends aggregated per work-group. */
__kernel void queue_from_bitmap(const int n, __global const uint *restrict bm,
                                __global const OFFSET_T *restrict indptr, NEXT_ARGS)
{
    AGG_DECLS
    __global ulong *tally = tallies + STATE;
    AGG_START
    const int v = (int)get_global_id(0);
    AGG_PASS
    if (v < n && ((bm[v >> 5] >> (v & 31)) & 1u)) AGG_PUSH(v)
    AGG_END(tally)
}

/* The current list <- the one vertex v (its offset 0, its tally from indptr), and the
 * tallies of the `clear` lists after it zeroed: a run's start in one launch, not three
 * writes and a fill. */
__kernel void load_one(const int v, const int clear, __global const OFFSET_T *restrict indptr,
                       __global int *restrict front, __global OFFSET_T *restrict offs,
                       __global ulong *restrict tallies)
{
    const int i = (int)get_global_id(0);
    if (i == 0) {
        front[0] = v;
        offs[0] = 0;
        tallies[STATE] = ((ulong)1 << EDGE_BITS) | (ulong)(indptr[v + 1] - indptr[v]);
    }
    if (i < clear) tallies[STATE + 1 + i] = 0;
}

/* bm <- the vertices of a list (bm zeroed before). */
__kernel void bitmap_from_queue(const int nq, __global const int *restrict q,
                                __global uint *bm)
{
    const int i = (int)get_global_id(0);
    if (i < nq) atomic_or(&bm[q[i] >> 5], 1u << (q[i] & 31));
}

/* The current list (tallies[STATE], zeroed before) <- every vertex with stamp[v] == it;
 * appends aggregated per work-group. */
__kernel void queue_from_stamp(const int n, __global const int *restrict stamp, const int it,
                               __global const OFFSET_T *restrict indptr, NEXT_ARGS)
{
    AGG_DECLS
    __global ulong *tally = tallies + STATE;
    AGG_START
    const int v = (int)get_global_id(0);
    AGG_PASS
    if (v < n && stamp[v] == it) AGG_PUSH(v)
    AGG_END(tally)
}

/* *total += the vertices v < n with label[v] == v (the roots of a labelling: CC's
 * components), summed per work-group in local memory, one atomic per group. */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void count_roots(const int n, __global const int *restrict label, __global uint *total)
{
    __local uint part[256];
    const int v = (int)get_global_id(0);
    const int l = (int)get_local_id(0);
    part[l] = (v < n && label[v] == v) ? 1u : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0 && part[0]) atomic_add(total, part[0]);
}
