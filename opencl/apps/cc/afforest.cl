/* Connected components by Afforest (Sutton, Ben-Nun and Barak, IPDPS 2018), on the
 * symmetrised graph: a forest `comp` (comp[v] <= v; a root is its own parent) that links
 * hook toward the smaller root by compare-and-swap, so every tree's root is the smallest
 * vertex of what it spans.
 *   afforest_link      round r: every vertex links to its r-th neighbour (neighbour
 *                      sampling: a few rounds connect most of a giant component);
 *   afforest_compress  pointer jumping: every vertex points at its root;
 *   afforest_sample    the roots of a fixed sample of vertices (the host takes the most
 *                      frequent: the giant component);
 *   afforest_mark      1 for the vertices outside it (compressed first) with more than
 *                      `min_edges` edges (-1: all of them; a rank's subgraph passes the
 *                      sampling rounds: a vertex they linked along every edge has none
 *                      left to hook);
 *   advance            (opencl/frontier.cl) over those vertices' out-edges, skipping the
 *                      first `skip` of each (already sampled): the final hooking, which
 *                      never visits the giant component's edges.
 * A link is ECL-CC's (Jaiganesh and Burtscher, "A High-Performance Connected Components
 * Implementation for GPUs", HPDC 2018): each end's root found with path halving (each
 * vertex on the way pointed at its grandparent: the next finds are shorter), then the
 * larger root hooked under the smaller by compare-and-swap; a failed swap continues from
 * the value it returned, with no new find. The link of GAPBS's Afforest, which re-read
 * both parents after each failed swap and shortened no path, took 10.8-11.5 ms of a
 * 12-19 ms run on one H100 at Graph500 scale 26, this one 5.2 ms of 8.8-9.8 ms
 * (benchmarks/RESULTS.md). The halving's plain writes race only with writes of other
 * ancestors of the same vertex, each smaller than the entry it replaces.
 * `comp` is read through volatile pointers: other work-items' compare-and-swaps must be
 * seen, not a cached copy. Concatenated before skeleton/frontier.cl. */

/* v's root, halving the path to it on the way. */
int afforest_find(const int v, volatile __global int *comp)
{
    int curr = comp[v];
    if (curr != v) {
        int prev = v, next;
        while (curr > (next = comp[curr])) {
            comp[prev] = next;
            prev = curr;
            curr = next;
        }
    }
    return curr;
}

/* Link u's and v's trees: the larger root under the smaller. */
void afforest_join(int u, int v, volatile __global int *comp)
{
    int a = afforest_find(u, comp), b = afforest_find(v, comp);
    while (a != b) {
        const int high = max(a, b), low = min(a, b);
        const int ret = atomic_cmpxchg(&comp[high], high, low);
        if (ret == high) break;
        if (high == a) a = ret;
        else b = ret;
    }
}

__kernel void afforest_link(const int n, __global const OFFSET_T *restrict indptr,
                            __global const int *restrict indices, const int r,
                            volatile __global int *comp)
{
    const int u = (int)get_global_id(0);
    if (u >= n) return;
    const OFFSET_T k = indptr[u] + r;
    if (k < indptr[u + 1]) afforest_join(u, indices[k], comp);
}

__kernel void afforest_compress(const int n, volatile __global int *comp)
{
    const int u = (int)get_global_id(0);
    if (u >= n) return;
    int p = comp[u];
    while (comp[p] != p) {
        p = comp[p];
        comp[u] = p;
    }
}

__kernel void afforest_sample(const int count, __global const int *restrict idx,
                              __global const int *restrict comp, __global int *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i < count) out[i] = comp[idx[i]];
}

__kernel void afforest_mark(const int n, volatile __global int *comp, const int giant,
                            __global const OFFSET_T *restrict indptr, const int min_edges,
                            __global int *restrict mark)
{
    const int u = (int)get_global_id(0);
    if (u >= n) return;
    int p = comp[u];
    while (comp[p] != p) p = comp[p];
    comp[u] = p;
    mark[u] = p != giant && indptr[u + 1] - indptr[u] > (OFFSET_T)min_edges;
}

#define ADVANCE_ARGS volatile __global int *comp, const int skip
#define ADVANCE_EDGE(u, k, v) if ((k) - indptr[u] >= skip) afforest_join((u), (v), comp);
