/*
 * Frontier-driven (push) steps for dynamic apps (FinePar TKDE §4.2): when the
 * frontier is small, one device runs the iteration alone over the frontier's
 * rows instead of scanning every row. A team of LANES work-items takes one
 * frontier vertex and strides over its edges (LANES = 1: a work-item per
 * vertex); the next frontier is appended through an atomic counter.
 *   -D LANES=n     work-items per frontier vertex (power of two)
 *   counters[0]: length of `next`;  counters[1]: sum of degrees of `next`
 */
#ifndef LANES
#define LANES 1
#endif

/* Top-down BFS step on A (out-edges): claim unvisited neighbours of the frontier. */
__kernel void bfs_push(const int nfront, __global const int *restrict front,
                       __global const int *restrict indptr,
                       __global const int *restrict indices,
                       __global int *level, __global int *parent, const int L,
                       __global int *next, __global int *counters,
                       __global const int *restrict outdeg)
{
    const int i = (int)(get_global_id(0) / LANES);
    const int lane = (int)(get_global_id(0) % LANES);
    if (i >= nfront) return;
    const int u = front[i];
    const int k1 = indptr[u + 1];
    for (int k = indptr[u] + lane; k < k1; k += LANES) {
        const int v = indices[k];
        if (level[v] < 0 && atomic_cmpxchg(&level[v], -1, L + 1) == -1) {
            parent[v] = u;
            next[atomic_inc(&counters[0])] = v;
            atomic_add(&counters[1], outdeg[v]);
        }
    }
}

/* Label propagation step on the symmetrised graph: push each active vertex's
 * label to its neighbours with atomic_min; a vertex whose label fell joins the
 * next active list once per iteration (stamp[v] == it marks it queued). */
__kernel void cc_push(const int nactive, __global const int *restrict active,
                      __global const int *restrict indptr,
                      __global const int *restrict indices,
                      __global int *label, __global int *stamp, const int it,
                      __global int *next, __global int *counters)
{
    const int i = (int)(get_global_id(0) / LANES);
    const int lane = (int)(get_global_id(0) % LANES);
    if (i >= nactive) return;
    const int u = active[i];
    const int lu = label[u];
    const int k1 = indptr[u + 1];
    for (int k = indptr[u] + lane; k < k1; k += LANES) {
        const int v = indices[k];
        if (lu < label[v]) {
            const int old = atomic_min(&label[v], lu);
            if (lu < old && atomic_xchg(&stamp[v], it) != it) {
                next[atomic_inc(&counters[0])] = v;
                atomic_add(&counters[1], indptr[v + 1] - indptr[v]);
            }
        }
    }
}
