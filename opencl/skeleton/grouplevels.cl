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
 * vertices, so a hub's thousand edges stall no work-item; on a road graph too, where each
 * edge is its own work-item's one chain of dependent reads: a variant in which a chunk of
 * vertices of at most 8 edges each took its own vertex's edges ran luxembourg's BFS in
 * 4.38 ms against 3.99, benchmarks/RESULTS.md). The app's fragment, concatenated
 * before this file, defines
 *   GROUP_ARGS            its kernel arguments (after the CSR);
 *   GROUP_INIT(v)         vertex v's state before the run (every vertex);
 *   GROUP_ROOT(r)         the root's;
 *   GROUP_EDGE(u, v, k, d)  edge k, u -> v, from a vertex of level d: 1 where v joins the
 *                         next list (once a level: the fragment sees to it), else 0.
 * out (int): [0] levels run (the last one found nothing), [1 + 2d] and [2 + 2d] level d's
 * next list and its out-edges, for the first max_rec levels. */

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
    __local int count, found_edges;
    for (int v = l; v < n; v += W) GROUP_INIT(v);
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (l == 0) {
        GROUP_ROOT(root);
        qa[0] = root;
        count = 0;
        found_edges = 0;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    __global int *cur = qa, *nxt = qb;
    int size = 1, depth = 0;
    while (size > 0) {
        for (int base = 0; base < size; base += W) {
            const int i = base + l;
            int u = -1, deg = 0;
            if (i < size) {
                u = cur[i];
                deg = indptr[u + 1] - indptr[u];
            }
            lv[l] = u;
            lo[l] = deg;
            barrier(CLK_LOCAL_MEM_FENCE);
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
            out[1 + 2 * depth] = size;
            out[2 + 2 * depth] = found_edges;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  /* every work-item has read the counts */
        if (l == 0) {
            count = 0;
            found_edges = 0;
        }
        depth++;
        __global int *t = cur;
        cur = nxt;
        nxt = t;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[0] = depth;
}
