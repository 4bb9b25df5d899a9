/* Connected components by Afforest (Sutton, Ben-Nun and Barak, IPDPS 2018), on the
 * symmetrised graph: a forest `comp` (comp[v] <= v; a root is its own parent) that links
 * hook toward the smaller root by compare-and-swap, so every tree's root is the smallest
 * vertex of what it spans.
 *   afforest_link      round r: every vertex links to its r-th neighbour (neighbour
 *                      sampling: a few rounds connect most of a giant component);
 *                      (no compression between rounds: the finds halve the paths);
 *   afforest_compress  pointer jumping: every vertex points at its root (after the final
 *                      hooking);
 *   afforest_sample    the roots of a fixed sample of vertices (found by walking up),
 *                      sorted in one
 *                      work-group's memory (any power-of-two size: a device may allow
 *                      fewer work-items than samples), and the most frequent (the giant
 *                      component's root; the smallest on a tie) with its count into
 *                      `giant`: no host wait between the sampling and the hooking;
 *   afforest_mark      1 for the vertices outside it (compressed first) with more than
 *                      `min_edges` edges (the sampling rounds: a vertex they linked along
 *                      every edge has none left to hook, an isolated one never had);
 *   advance            (opencl/frontier.cl) over those vertices' out-edges, skipping the
 *                      first `skip` of each (already sampled): the final hooking, which
 *                      never visits the giant component's edges;
 *   afforest_group     a small input's whole run in one work-group's launch instead (a CPU
 *                      device: one work-item's loop);
 *   afforest_link_entries  a small input's every edge linked, a work-item an entry (a GPU:
 *                      between the labels' start and afforest_compress).
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

/* A small input's links on a GPU (`Afforest.shape` "wide"): work-item k links entry k,
 * (u, v) = (rows[k], indices[k]), where v < u (each edge of the symmetric graph once). */
__kernel void afforest_link_entries(const int nnz, __global const int *restrict rows,
                                    __global const int *restrict indices,
                                    volatile __global int *comp)
{
    const int k = (int)get_global_id(0);
    if (k >= nnz) return;
    const int u = rows[k], v = indices[k];
    if (v < u) afforest_join(u, v, comp);
}

/* A small input's whole run in one work-group (`Afforest.shape` "loop"): every vertex its own
 * parent, every entry (u, v) with v < u linked (the graph is symmetric: each edge once;
 * the work-items stride over the entries, `rows` holding each one's row, so a long row
 * stalls no work-item), every vertex compressed. One launch, no sampling: on a few
 * thousand vertices a launch costs more than linking every edge. */
__kernel void afforest_group(const int n, const int nnz, __global const int *restrict rows,
                             __global const int *restrict indices, volatile __global int *comp)
{
    const int l = (int)get_local_id(0), W = (int)get_local_size(0);
    for (int v = l; v < n; v += W) comp[v] = v;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int k = l; k < nnz; k += W) {
        const int u = rows[k], v = indices[k];
        if (v < u) afforest_join(u, v, comp);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int v = l; v < n; v += W) {
        int p = comp[v];
        while (comp[p] != p) p = comp[p];
        comp[v] = p;
    }
}

/* v's root, read only (the links are done: no tree changes while it is read). */
int afforest_root(const int v, __global const int *restrict comp)
{
    int p = comp[v];
    while (comp[p] != p) p = comp[p];
    return p;
}

#define AFFOREST_SAMPLES 1024  /* finepar/apps/afforest.py's SAMPLES */

/* The longer of two runs of equal roots (length, root) into slot i; the smaller root on a tie. */
void afforest_keep_longer(const int i, const int j, __local int *len, __local int *root)
{
    if (len[j] > len[i] || (len[j] == len[i] && root[j] < root[i])) {
        len[i] = len[j];
        root[i] = root[j];
    }
}

/* One work-group of any power-of-two size up to AFFOREST_SAMPLES (each work-item takes
 * every W-th slot): the sample's roots sorted (bitonic), each run of equal roots measured
 * from its start, the longest kept. */
__kernel void afforest_sample(const int count, __global const int *restrict idx,
                              __global const int *restrict comp, __global int *restrict giant)
{
    __local int s[AFFOREST_SAMPLES], len[AFFOREST_SAMPLES], root[AFFOREST_SAMPLES];
    const int l = (int)get_local_id(0), W = (int)get_local_size(0), N = AFFOREST_SAMPLES;
    for (int i = l; i < N; i += W)
        s[i] = i < count ? afforest_root(idx[i], comp) : INT_MAX;  /* padding: no root */
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 2; k <= N; k <<= 1) {  /* bitonic sort, ascending */
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int t = l; t < N / 2; t += W) {  /* the pairs (i, i + j), bit j of i clear */
                const int i = 2 * j * (t / j) + t % j, p = i + j;
                if ((s[i] > s[p]) == ((i & k) == 0)) {
                    const int x = s[i];
                    s[i] = s[p];
                    s[p] = x;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (int i = l; i < N; i += W) {
        const int v = s[i];
        int run = 0;
        if (v != INT_MAX && (i == 0 || s[i - 1] != v)) {  /* a run starts here: its end */
            int lo = i, hi = N;  /* s[lo] == v; hi is N or past the run */
            while (hi - lo > 1) {
                const int mid = (lo + hi) >> 1;
                if (s[mid] == v) lo = mid;
                else hi = mid;
            }
            run = hi - i;
        }
        len[i] = run;
        root[i] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = N >> 1; step > 0; step >>= 1) {
        for (int i = l; i < step; i += W) afforest_keep_longer(i, i + step, len, root);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) {
        giant[0] = root[0];
        giant[1] = len[0];
    }
}

__kernel void afforest_mark(const int n, volatile __global int *comp,
                            __global const int *restrict giant_at,
                            __global const OFFSET_T *restrict indptr, const int min_edges,
                            __global int *restrict mark)
{
    const int u = (int)get_global_id(0);
    if (u >= n) return;
    const int giant = giant_at[0];
    int p = comp[u];
    while (comp[p] != p) p = comp[p];
    comp[u] = p;
    mark[u] = p != giant && indptr[u + 1] - indptr[u] > (OFFSET_T)min_edges;
}

#define ADVANCE_ARGS volatile __global int *comp, const int skip
#define ADVANCE_EDGE(u, k, v) if ((k) - indptr[u] >= skip) afforest_join((u), (v), comp);
