/* Connected components, FastSV (Zhang, Azad and Hu, SIAM PP 2020), on the symmetrised graph:
 * f is the parent forest (f[v] <= v), gf = f[f] the grandparents, mn[u] the smallest gf
 * among u's neighbours (the edge phase: the (min, second) row operation of apps/cc/rowop.cl when
 * pulled over every row, or this file's push from the vertices whose gf changed).
 * Concatenated before skeleton/frontier.cl. */
#define ADVANCE_ARGS __global const int *restrict gf, __global int *mn
#define ADVANCE_EDGE(u, k, v) atomic_min(&mn[v], gf[u]);

/* Stochastic and aggressive hooking, then shortcutting: f[f[u]], f[u] <- mn[u]; f[u] <- gf[u],
 * with f[u] as the round began (f_old, a copy), as FastSV states it: the new f is the minimum
 * of every candidate whatever the order of the work-items, so identical inputs give identical
 * forests (every rank of a distributed run repeats this phase and must agree). */
__kernel void fastsv_hook(const int n, __global const int *restrict mn, __global int *f,
                          __global const int *restrict gf, __global const int *restrict f_old)
{
    const int u = (int)get_global_id(0);
    if (u >= n) return;
    const int m = mn[u];
    if (m < INT_MAX) {
        atomic_min(&f[f_old[u]], m);
        atomic_min(&f[u], m);
    }
    atomic_min(&f[u], gf[u]);
}

/* gf <- f[f]; the vertices whose gf fell are stamped with round `it` and counted
 * (counters[0]: how many; counters[1]: their degrees, the next push's edges). */
__kernel void fastsv_grandparent(const int n, __global const int *restrict f, __global int *gf,
                                 __global int *restrict stamp, const int it,
                                 __global const OFFSET_T *restrict indptr,
                                 __global uint *counters)
{
    const int u = (int)get_global_id(0);
    if (u >= n) return;
    const int g = f[f[u]];
    if (g != gf[u]) {
        gf[u] = g;
        stamp[u] = it;
        atomic_inc(&counters[0]);
        atomic_add(&counters[1], (uint)(indptr[u + 1] - indptr[u]));
    }
}
