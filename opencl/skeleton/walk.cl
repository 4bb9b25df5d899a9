/*
 * A frontier walked by one work-item, level after level, in one launch (the CPU's share of
 * a frontier app's levels while its frontiers stay small; finepar/engine/walk.py).
 *
 * A level-synchronous loop is the wrong shape for a CPU running small frontiers: on PoCL a
 * work-group barrier costs microseconds, so a level of a few hundred edges costs more in
 * barriers than in work. One work-item walking a FIFO queue, as a sequential BFS does,
 * pays a few nanoseconds an edge and nothing a level; PoCL compiles it to a plain loop.
 *
 * The queue `fifo` holds every vertex the walk has appended, in order; the current level is
 * fifo[head .. tail). Each level runs the app's ADVANCE_EDGE(u, k, v) (the same fragment the
 * device-wide `advance` runs, concatenated before this file) over the level's out-edges;
 * PUSH_NEXT(v) appends v at the tail. The walk stops when a level finds nothing (`EMPTY`),
 * when the level it found has more than `max_edges` out-edges (`GREW`: a device running
 * levels in parallel does it faster), or after `max_levels` levels (`CAPPED`).
 *
 * Results, one blocking read on the host: out[0] head, out[1] tail, out[2] levels run,
 * out[3] why it stopped, out[4] the current level's out-edges, then per level l the
 * vertices it found (out[OUT + 2 l]) and their out-edges (out[OUT + 2 l + 1]).
 */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifndef OFFSET_T
#define OFFSET_T int
#endif
#define WALK_EMPTY 0
#define WALK_GREW 1
#define WALK_CAPPED 2
#define OUT 5

/* One work-item: the fragment's atomics need not be atomic (a locked instruction an edge
 * found costs a CPU core more than the rest of the edge's work). */
int walk_cmpxchg(__global int *p, const int cmp, const int val)
{
    const int old = *p;
    if (old == cmp) *p = val;
    return old;
}
int walk_min(__global int *p, const int val)
{
    const int old = *p;
    if (val < old) *p = val;
    return old;
}
#undef atomic_cmpxchg
#undef atomic_min
#define atomic_cmpxchg(p, c, v) walk_cmpxchg((p), (c), (v))
#define atomic_min(p, v) walk_min((p), (v))

#undef PUSH_NEXT
#define PUSH_NEXT(v) {                                                                  \
        fifo[tail++] = (v);                                                             \
        grown += (long)(indptr[(v) + 1] - indptr[v]);                                   \
    }

__kernel void walk(const int it0, const int max_levels, const long max_edges,
                   const int head0, const int tail0, const long edges0,
                   __global int *restrict fifo, __global const OFFSET_T *restrict indptr,
                   __global const int *restrict indices, __global long *restrict out,
                   ADVANCE_ARGS)
{
    int head = head0, tail = tail0, it = it0, l = 0, stop = WALK_CAPPED;
    long edges = edges0;
    while (l < max_levels) {
        const int end = tail;
        long grown = 0;
        for (int i = head; i < end; ++i) {
            const int u = fifo[i];
            const OFFSET_T last = indptr[u + 1];
            for (OFFSET_T k = indptr[u]; k < last; ++k) {
                const int v = indices[k];
                ADVANCE_EDGE(u, k, v)
            }
        }
        out[OUT + 2 * l] = tail - end;
        out[OUT + 2 * l + 1] = grown;
        head = end;
        edges = grown;
        ++l;
        ++it;
        if (tail == end) { stop = WALK_EMPTY; break; }
        if (grown > max_edges) { stop = WALK_GREW; break; }
    }
    out[0] = head;
    out[1] = tail;
    out[2] = l;
    out[3] = stop;
    out[4] = edges;
}
