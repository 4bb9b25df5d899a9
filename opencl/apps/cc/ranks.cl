/* Connected components across ranks (finepar/apps/ccranks.py): what one rank does after
 * Afforest has labelled the components of its own subgraph (its rows, the edges whose
 * both ends it owns) in `comp` (local ids, compressed: comp[v] is v's root, the smallest
 * local id of its local component). `giant` is a vertex of the rank's giant component
 * (Afforest's sample), so comp[giant] is the giant's root. `state` holds the records'
 * count, then `links` (P words: the giants linked with each owner's, a bit each),
 * `gmin` (P), the giant's root and the records' count by their ghosts' owners (P).
 *
 * A rank's cross edges (u, g), u its own, g a ghost another rank owns, are kept as a CSR
 * over its boundary rows whose columns are bit positions: each owner's ghosts are a
 * run of bits (padded to 32), and `bits` holds, per ghost, whether the owner's giant
 * component holds it (received from the owner each run).
 *   ranks_giant_bits   on the owner: those bits, 32 asked vertices a work-item, from word
 *                      `at` of `out` (the host's staging buffer, or the half of the send
 *                      region the askers' GPUs copy from);
 *   ranks_hook         a work-item per boundary row, returning at once in the giant
 *                      (whose cross edges it never reads); outside it, every cross
 *                      edge to an owner's giant attaches the row's root to that giant
 *                      (a bit of `mask`; two giants met at one root are linked in
 *                      `links`; `gmin` keeps each giant's smallest attached root);
 *                      every other cross edge is a record (root, row, bit) for the host;
 *   ranks_probe        a sample of cross edges: giant to giant links;
 *   ranks_giant_rows   every cross edge of the giant's rows to the owners in `want`
 *                      (where the sample found no giant link);
 *   ranks_records      the records the hooking kept (their count read from `state`, so
 *                      the host reads the count and the records in one wait) in the form
 *                      every rank gathers: root and vertex as global ids, the ghost's id
 *                      (`ghosts`, by bit position), the root's mask (its giants); each
 *                      counted by its ghost's owner;
 *   ranks_label        the final labels: the giant's, a record root's (set in `mask`
 *                      with bit 31), an attached giant's, or the root's own id.
 * The gathered records of every rank are solved on the device, the same on every rank,
 * as a forest `parent` over global vertex ids (n entries; only the records' vertices,
 * the giants' roots and their smallest attached roots are set in a run, and only those
 * are read), hooked by Afforest's afforest_join (afforest.cl, concatenated before):
 *   ranks_solve_init   each record (root a, vertex u, ghost g, a's giants) sets
 *                      parent[a] = a, parent[u] = a (a <= u); each extra pair (x, y)
 *                      (a giant's root with itself, its smallest attached root or a
 *                      giant it was linked with) sets parent[x] = x, parent[y] = y;
 *   ranks_solve_link   joins u with g (g's parent is its root from its owner's record of
 *                      the same edge), a with each of its giants' roots, x with y;
 *   ranks_solve_label  a recorded root of this rank gets its tree's root (the smallest
 *                      vertex of its component) in `mask` with bit 31; each giant's
 *                      label into `glabel`.
 * ranks_hook and ranks_giant_rows add the cross entries they read to `touched[0]` and
 * `touched[1]` (summed per work-group, one 64-bit atomic a group: counts for the tests
 * and the report, not a contended word).
 *   -D OFFSET_T=int|long   the cross CSR's offsets */

#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#define LABEL_FLAG 0x80000000u
#define RANKS_WG 256

/* touched[0] += the work-group's `mine` (every work-item of the group calls it). */
void ranks_tally(const ulong mine, __local ulong *part, volatile __global ulong *touched)
{
    const int l = (int)get_local_id(0);
    part[l] = mine;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = RANKS_WG / 2; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0 && part[0]) atom_add(touched, part[0]);
}

int ranks_owner(const int b, __global const int *restrict owner_start, const int parts)
{
    int o = 0;
    while (o + 1 < parts && b >= owner_start[o + 1]) o++;
    return o;
}

__kernel void ranks_giant_bits(const int words, __global const int *restrict asked,
                               __global const int *restrict comp,
                               __global const int *restrict giant_at,
                               __global uint *restrict out, const int at)
{
    const int giant = giant_at[0];  /* afforest_sample's giant root */
    const int w = (int)get_global_id(0);
    if (w >= words) return;
    const int root = comp[giant];
    uint bits = 0;
    for (int j = 0; j < 32; j++) {
        const int v = asked[32 * w + j];
        if (v >= 0 && comp[v] == root) bits |= 1u << j;
    }
    out[at + w] = bits;
}

/* The cross edges of one boundary row outside the giant (see the file's description);
 * returns the entries read. The row's root is one, so the owners' giants it meets are
 * gathered first and each shared word is touched once a row, not once an edge: at most
 * one atomic on the root's mask, and one on `links` and on `gmin` per giant met, each
 * only where a read shows it would change the word; one reservation of the row's
 * records. */
ulong ranks_hook_row(const int i, __global const int *restrict brows,
                     __global const OFFSET_T *restrict xptr, __global const int *restrict xcol,
                     __global const uint *restrict bits,
                     __global const int *restrict owner_start, const int parts, const int a,
                     const int lo, volatile __global uint *mask, volatile __global int *state,
                     __global int *restrict records, const int cap)
{
    volatile __global uint *links = (volatile __global uint *)(state + 1);
    volatile __global int *gmin = state + 1 + parts;
    const OFFSET_T first = xptr[i], last = xptr[i + 1];
    uint hit = 0;
    int count = 0;
    for (OFFSET_T k = first; k < last; k++) {
        const int b = xcol[k];
        if ((bits[b >> 5] >> (b & 31)) & 1u) hit |= 1u << ranks_owner(b, owner_start, parts);
        else count++;
    }
    /* Plain reads first: the words only gain bits (or fall, gmin), so a stale read shows
     * less than is there and costs at most an atomic that was not needed. A root whose
     * mask holds every giant met was attached by whoever set those bits, with the same
     * root: nothing to do. Unread, the P words of `links` took 7.5 M contended atomics a
     * run on four ranks at Graph500 scale 26 (3.5 ms of kernels a rank). */
    __global const uint *seen = (__global const uint *)mask;
    __global const uint *seen_links = (__global const uint *)links;
    __global const int *seen_gmin = (__global const int *)gmin;
    if (hit && (seen[a] & hit) != hit) {
        const uint all = atomic_or(&mask[a], hit) | hit;  /* every giant attached to a */
        for (uint h = hit; h; h &= h - 1u) {
            const int o = 31 - clz(h & (~h + 1u));
            const uint others = all & ~(1u << o);
            if (others && (seen_links[o] & others) != others) atomic_or(&links[o], others);
            if (a + lo < seen_gmin[o]) atomic_min(&gmin[o], a + lo);
        }
    }
    if (count) {
        const int u = brows[i];
        int at = atomic_add(state, count);
        for (OFFSET_T k = first; k < last && at < cap; k++) {
            const int b = xcol[k];
            if (!((bits[b >> 5] >> (b & 31)) & 1u)) {
                records[4 * at] = a;
                records[4 * at + 1] = u;
                records[4 * at + 2] = b;
                at++;
            }
        }
    }
    return (ulong)(last - first);
}

__kernel __attribute__((reqd_work_group_size(RANKS_WG, 1, 1)))
void ranks_hook(const int rows, __global const int *restrict brows,
                __global const OFFSET_T *restrict xptr,
                __global const int *restrict xcol, __global const uint *restrict bits,
                __global const int *restrict owner_start, const int parts,
                __global const int *restrict comp,
                __global const int *restrict giant_at, const int lo,
                volatile __global uint *mask, volatile __global int *state,
                __global int *restrict records, const int cap,
                volatile __global ulong *touched)
{
    const int giant = giant_at[0];  /* afforest_sample's giant root */
    __local ulong part[RANKS_WG];
    const int i = (int)get_global_id(0);
    if (i == 0) state[1 + 2 * parts] = comp[giant];
    ulong read = 0;
    if (i < rows) {
        const int a = comp[brows[i]];
        if (a != comp[giant])
            read = ranks_hook_row(i, brows, xptr, xcol, bits, owner_start, parts, a, lo, mask,
                                  state, records, cap);
    }
    ranks_tally(read, part, touched);
}

__kernel void ranks_probe(const int count, __global const int *restrict pu,
                          __global const int *restrict pb, __global const uint *restrict bits,
                          __global const int *restrict owner_start, const int parts,
                          __global const int *restrict comp,
                          __global const int *restrict giant_at, const int me,
                          volatile __global int *state)
{
    const int giant = giant_at[0];  /* afforest_sample's giant root */
    volatile __global uint *links = (volatile __global uint *)(state + 1);
    const int i = (int)get_global_id(0);
    if (i >= count) return;
    const int b = pb[i];
    if (comp[pu[i]] == comp[giant] && ((bits[b >> 5] >> (b & 31)) & 1u))
        atomic_or(&links[ranks_owner(b, owner_start, parts)], 1u << me);
}

__kernel __attribute__((reqd_work_group_size(RANKS_WG, 1, 1)))
void ranks_giant_rows(const int rows, __global const int *restrict brows,
                      __global const OFFSET_T *restrict xptr,
                      __global const int *restrict xcol, __global const uint *restrict bits,
                      __global const int *restrict owner_start, const int parts,
                      __global const int *restrict comp,
                      __global const int *restrict giant_at, const int me,
                      const uint want, volatile __global int *state,
                      volatile __global ulong *touched)
{
    const int giant = giant_at[0];  /* afforest_sample's giant root */
    __local ulong part[RANKS_WG];
    volatile __global uint *links = (volatile __global uint *)(state + 1);
    const int i = (int)get_global_id(0);
    ulong read = 0;
    if (i < rows && comp[brows[i]] == comp[giant]) {
        for (OFFSET_T k = xptr[i]; k < xptr[i + 1]; k++) {
            const int b = xcol[k];
            const int o = ranks_owner(b, owner_start, parts);
            if (((want >> o) & 1u) && ((bits[b >> 5] >> (b & 31)) & 1u))
                atomic_or(&links[o], 1u << me);
        }
        read = (ulong)(xptr[i + 1] - xptr[i]);
    }
    ranks_tally(read, part, touched + 1);
}

__kernel void ranks_records(const int cap, __global int *restrict records,
                            __global const uint *restrict mask,
                            __global const int *restrict ghosts,
                            __global const int *restrict owner_start, const int parts,
                            const int lo, volatile __global int *state)
{
    const int count = min(state[0], cap);  /* the hooking's records, as many as it kept */
    for (int i = (int)get_global_id(0); i < count; i += (int)get_global_size(0)) {
        const int a = records[4 * i], b = records[4 * i + 2];
        records[4 * i] = a + lo;
        records[4 * i + 1] += lo;
        records[4 * i + 2] = ghosts[b];
        records[4 * i + 3] = (int)mask[a];
        atomic_inc(&state[2 + 2 * parts + ranks_owner(b, owner_start, parts)]);
    }
}

__kernel void ranks_label(const int n, __global const int *restrict comp,
                          __global const int *restrict giant_at,
                          __global const uint *restrict mask,
                          __global const int *restrict glabel, const int me, const int lo,
                          __global int *restrict out)
{
    const int giant = giant_at[0];  /* afforest_sample's giant root */
    const int v = (int)get_global_id(0);
    if (v >= n) return;
    const int r = comp[v];
    if (r == comp[giant]) {  /* one rank: no label came, the root is the label */
        out[v] = glabel[me] >= 0 ? glabel[me] : r + lo;
        return;
    }
    const uint m = mask[r];
    if (m & LABEL_FLAG) out[v] = (int)(m & ~LABEL_FLAG);
    else if (m) out[v] = glabel[31 - clz(m & (~m + 1u))];  /* the lowest attached giant */
    else out[v] = r + lo;
}

__kernel void ranks_solve_init(const int count, __global const int *restrict rec,
                               const int pairs, __global const int *restrict extra,
                               __global int *restrict parent)
{
    const int j = (int)get_global_id(0);
    if (j < count) {
        const int a = rec[4 * j];
        parent[a] = a;
        parent[rec[4 * j + 1]] = a;
    }
    if (j < pairs) {
        parent[extra[2 * j]] = extra[2 * j];
        parent[extra[2 * j + 1]] = extra[2 * j + 1];
    }
}

__kernel void ranks_solve_link(const int count, __global const int *restrict rec,
                               const int pairs, __global const int *restrict extra,
                               __global const int *restrict groots,
                               volatile __global int *parent)
{
    const int j = (int)get_global_id(0);
    if (j < count) {
        afforest_join(rec[4 * j + 1], rec[4 * j + 2], parent);
        for (uint m = (uint)rec[4 * j + 3]; m; m &= m - 1u)
            afforest_join(rec[4 * j], groots[31 - clz(m & (~m + 1u))], parent);
    }
    if (j < pairs) afforest_join(extra[2 * j], extra[2 * j + 1], parent);
}

int ranks_find(int p, __global const int *restrict parent)
{
    while (parent[p] != p) p = parent[p];
    return p;
}

__kernel void ranks_solve_label(const int count, __global const int *restrict rec,
                                const int parts, __global const int *restrict groots,
                                __global const int *restrict parent, const int lo,
                                const int hi, __global uint *restrict mask,
                                __global int *restrict glabel)
{
    const int j = (int)get_global_id(0);
    if (j < count) {
        const int a = rec[4 * j];
        if (a >= lo && a < hi) mask[a - lo] = (uint)ranks_find(a, parent) | LABEL_FLAG;
    }
    if (j < parts) glabel[j] = ranks_find(groots[j], parent);
}
