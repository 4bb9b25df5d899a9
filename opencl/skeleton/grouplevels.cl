/* A frontier app's every level in one work-group's launch, for a small input
 * (finepar/engine/grouplevels.py; issue 29): where a launch and a host round trip a level
 * cost more than the level. One work-group (one work-item on a CPU device, where it is a
 * plain queue walk).
 *
 * The out-edge CSR (indptr / indices, int offsets). Each level's list (cur) is taken in
 * chunks of W vertices: each work-item loads one vertex and its out-degree, an inclusive
 * scan of the degrees in local memory (Hillis and Steele) gives the chunk's edges, and the
 * work-items stride over those edges, each finding its edge's vertex by a binary search of
 * the scan (Merrill, Garland and Grimshaw, PPoPP 2012: a gather balanced over edges, not
 * vertices, so a hub's thousand edges stall no work-item). A chunk whose every vertex has at
 * most SHORT_ROW out-edges skips the scan: each work-item takes its own vertex's edges (a
 * road graph's levels: luxembourg's 952 of 1-6 edges a vertex). The app's fragment, concatenated
 * before this file, defines
 *   GROUP_ARGS            its kernel arguments (after the CSR);
 *   GROUP_INIT(v)         vertex v's state before the run (every vertex);
 *   GROUP_ROOT(r)         the root's;
 *   GROUP_EDGE(u, v, k, d)  edge k, u -> v, from a vertex of level d: 1 where v joins the
 *                         next list (once a level: the fragment sees to it), else 0.
 * out (int): [0] levels run (the last one found nothing), [1] vertices listed over the
 * run (the root too), [2 + 2d] and [3 + 2d] level d's list and its out-edges, for the first
 * max_rec levels. */

#ifndef SHORT_ROW
#define SHORT_ROW 8
#endif

/* Edge k, u -> v: where the app lists v, append it to the next list and count its edges. */
#define LIST(u, v, k)                                                        \
    if (GROUP_EDGE((u), (v), (k), depth)) {                                  \
        nxt[atomic_inc(&count)] = (v);                                       \
        atomic_add(&found_edges, indptr[(v) + 1] - indptr[(v)]);             \
    }

__kernel void group_levels(const int n, const int root, const int max_rec,
                           __global const int *restrict indptr,
                           __global const int *restrict indices, GROUP_ARGS,
                           __global int *qa, __global int *qb, __global int *out,
                           __local int *lv, __local int *lo)
{
    const int l = (int)get_local_id(0), W = (int)get_local_size(0);
    __local int count, found_edges, long_chunk;  /* the last chunk with a long row */
    for (int v = l; v < n; v += W) GROUP_INIT(v);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (l == 0) {
        GROUP_ROOT(root);
        qa[0] = root;
        count = 0;
        found_edges = 0;
        long_chunk = 0;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    __global int *cur = qa, *nxt = qb;
    int size = 1, depth = 0, reached = 1, chunk = 0;
    while (size > 0) {
        for (int base = 0; base < size; base += W) {
            const int i = base + l;
            int u = -1, k0 = 0, deg = 0;
            if (i < size) {
                u = cur[i];
                k0 = indptr[u];
                deg = indptr[u + 1] - k0;
            }
            lv[l] = u;
            lo[l] = deg;
            chunk++;  /* rising: no flag to clear between chunks */
            if (deg > SHORT_ROW) atomic_max(&long_chunk, chunk);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (long_chunk != chunk) {  /* every row short: each its own edges */
                for (int k = k0; k < k0 + deg; k++) {
                    const int v = indices[k];
                    LIST(u, v, k)
                }
                barrier(CLK_LOCAL_MEM_FENCE);  /* the flag read before the next chunk's */
                continue;
            }
            for (int off = 1; off < W; off <<= 1) {
                const int t = l >= off ? lo[l - off] : 0;
                barrier(CLK_LOCAL_MEM_FENCE);
                lo[l] += t;
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            const int total = lo[W - 1];
            for (int e = l; e < total; e += W) {
                int a = 0, b = W - 1;  /* the first slot whose inclusive sum passes e */
                while (a < b) {
                    const int m = (a + b) >> 1;
                    if (lo[m] > e) b = m;
                    else a = m + 1;
                }
                const int w = lv[a];
                const int k = indptr[w] + e - (a ? lo[a - 1] : 0);
                const int v = indices[k];
                LIST(w, v, k)
            }
            barrier(CLK_LOCAL_MEM_FENCE);  /* lv and lo are the next chunk's */
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        size = count;
        if (l == 0 && depth < max_rec) {
            out[2 + 2 * depth] = size;
            out[3 + 2 * depth] = found_edges;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  /* every work-item has read the counts */
        if (l == 0) {
            count = 0;
            found_edges = 0;
        }
        reached += size;
        depth++;
        __global int *t = cur;
        cur = nxt;
        nxt = t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        out[0] = depth;
        out[1] = reached;
    }
}
