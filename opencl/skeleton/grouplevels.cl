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
 * next list and its out-edges, for the first max_rec levels.
 *
 * A level's cost is its chain of dependent reads and its barriers, not its few edges (3.5
 * us a level on one H200, luxembourg's 952 levels), so:
 *   - the lists' first lq_cap entries live in local memory (lq: two halves), the rest in
 *     qa / qb at the same positions;
 *   - a list's out-edges are the next level's scan total, not a read of each listed
 *     vertex's offsets when it is listed, and each chunk vertex's first offset waits in
 *     local memory (ls) for the edges' gather;
 *   - the scan runs as many rounds as the chunk's vertices need (a road graph's lists hold
 *     tens of vertices: 4-7 rounds, not 10), and the counters alternate between two slots,
 *     so a level ends on one barrier. */

/* Edge k, u -> v: where the app lists v, append it to the next list. */
#define LIST(u, v, k)                                                        \
    if (GROUP_EDGE((u), (v), (k), depth)) {                                  \
        const int at_ = atomic_inc(&counts[p]);                              \
        if (at_ < lq_cap) nxt_l[at_] = (v);                                  \
        else nxt[at_] = (v);                                                 \
    }

__kernel void group_levels(const int n, const int root, const int max_rec,
                           __global const int *restrict indptr,
                           __global const int *restrict indices, GROUP_ARGS,
                           __global int *qa, __global int *qb, __global int *out,
                           __local int *lv, __local int *lo, __local int *ls,
                           __local int *lq, const int lq_cap)
{
    const int l = (int)get_local_id(0), W = (int)get_local_size(0);
    __local int counts[2];
    for (int v = l; v < n; v += W) GROUP_INIT(v);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        GROUP_ROOT(root);
        lq[0] = root;
        counts[0] = 0;
        counts[1] = 0;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    __global int *cur = qa, *nxt = qb;
    __local int *cur_l = lq, *nxt_l = lq + lq_cap;
    int size = 1, depth = 0, p = 0;
    while (size > 0) {
        int edges = 0;  /* this list's out-edges: the last level's found_edges */
        for (int base = 0; base < size; base += W) {
            const int i = base + l, span = min(W, size - base);
            int u = -1, deg = 0, first = 0;
            if (i < size) {
                u = i < lq_cap ? cur_l[i] : cur[i];
                first = indptr[u];
                deg = indptr[u + 1] - first;
            }
            lv[l] = u;
            lo[l] = deg;
            ls[l] = first;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int off = 1; off < span; off <<= 1) {
                const int t = l >= off ? lo[l - off] : 0;
                barrier(CLK_LOCAL_MEM_FENCE);
                lo[l] += t;
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            const int total = lo[span - 1];
            edges += total;
            for (int e = l; e < total; e += W) {
                int a = 0, b = span - 1;  /* the first slot whose inclusive sum passes e */
                while (a < b) {
                    const int m = (a + b) >> 1;
                    if (lo[m] > e) b = m;
                    else a = m + 1;
                }
                const int w = lv[a];
                const int k = ls[a] + e - (a ? lo[a - 1] : 0);
                const int v = indices[k];
                LIST(w, v, k)
            }
            if (base + W < size) barrier(CLK_LOCAL_MEM_FENCE);  /* lv, lo, ls: the next chunk's */
        }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        size = counts[p];
        if (l == 0) {
            counts[p ^ 1] = 0;  /* the next level's counter; this one is read until then */
            if (depth > 0 && depth - 1 < max_rec) out[2 + 2 * (depth - 1)] = edges;
            if (depth < max_rec) {
                out[1 + 2 * depth] = size;
                if (size == 0) out[2 + 2 * depth] = 0;
            }
        }
        p ^= 1;
        depth++;
        __global int *t = cur;
        cur = nxt;
        nxt = t;
        __local int *tl = cur_l;
        cur_l = nxt_l;
        nxt_l = tl;
    }
    if (l == 0) out[0] = depth;
}
