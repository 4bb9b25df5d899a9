/* Speculative greedy colouring with conflict resolution (Gebremedhin and Manne, 2000;
 * Deveci, Boman, Devine and Rajamanickam, IPDPS 2016, vertex-based), on one device, on the
 * symmetrised graph (self-loops ignored), in rounds over a worklist of uncoloured vertices:
 *
 *   assign   every vertex of the worklist takes the smallest colour, from lo[v] up, that no
 *            committed neighbour has (a 64-colour window at a time, a 64-bit mask; lo[v]
 *            remembers where the last round's search ended: committed colours never change);
 *   resolve  a vertex keeps it unless a neighbour of this round's worklist took the same
 *            colour and has the higher priority: largest degree first, ties by mix32 of the
 *            id (apps/coloring/priorities.cl); the winners commit, the rest form the next worklist.
 *
 * The highest-priority vertex of a round always wins, and a vertex's choice depends only on
 * committed colours, so the colouring is deterministic: the same for any device and order.
 * Vertices of at most LONG_ROW entries take one work-item each (`_short` kernels), longer
 * ones a work-group each (`_long`). Worklists live on the device with their counts:
 * cnt[3 * j + 0, 1, 2] are round j's short and long counts and its entries (64-bit atomic
 * appends), so the host enqueues rounds in batches and reads the counts once per batch; a
 * round on empty worklists does nothing. Concatenated after apps/coloring/priorities.cl (mix32). */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifndef OFFSET_T
#define OFFSET_T int
#endif
#ifndef LONG_ROW
#define LONG_ROW 256
#endif

#define DEG(v) (indptr[(v) + 1] - indptr[v])
/* w outranks v: larger degree, ties by the hashed id (distinct: mix32 is a bijection) */
#define OUTRANKS(w, v) (DEG(w) > DEG(v) ||                                              \
                        (DEG(w) == DEG(v) && mix32((uint)(w) + key) > mix32((uint)(v) + key)))
#define IN_WINDOW(c, base) ((uint)((c) - (base)) < 64u)
#define LOWEST_FREE(mask) (63 - (int)clz(~(mask) & ((mask) + 1ul)))

/* Round j (round `round` of the run) over its short or long worklist `list`. */
#define ASSIGN_ARGS const int j, const int round, __global const OFFSET_T *restrict indptr, \
    __global const int *restrict indices, __global const int *restrict color,               \
    __global int *restrict tent, __global int *restrict lo, __global int *restrict stamp,   \
    __global const int *restrict list, __global const ulong *cnt
/* ... and the losers' worklist `next` of round j + 1; `key` keys the ids' hash. */
#define RESOLVE_ARGS const int j, const int round, const uint key,                         \
    __global const OFFSET_T *restrict indptr, __global const int *restrict indices,         \
    __global int *restrict color, __global const int *restrict tent,                        \
    __global const int *restrict stamp, __global const int *restrict list,                  \
    __global int *next, __global ulong *cnt

/* Round j's worklist (0: short, 1: long) gets v, with its entries. */
void append(__global ulong *cnt, const int j, const int cls, __global int *list, const int v,
            const OFFSET_T deg)
{
    const uint p = (uint)atom_inc(&cnt[3 * j + cls]);
    list[p] = v;
    atom_add(&cnt[3 * j + 2], (ulong)deg);
}

/* Every vertex uncoloured, in round 0's worklists. */
__kernel void spec_init(const int n, __global const OFFSET_T *restrict indptr,
                        __global int *restrict color, __global int *restrict lo,
                        __global int *restrict stamp, __global int *list_s,
                        __global int *list_l, __global ulong *cnt)
{
    const int v = (int)get_global_id(0);
    if (v >= n) return;
    color[v] = -1;
    lo[v] = 0;
    stamp[v] = -1;
    const OFFSET_T d = DEG(v);
    if (d > LONG_ROW) append(cnt, 0, 1, list_l, v, d);
    else append(cnt, 0, 0, list_s, v, d);
}

__kernel void spec_assign_short(ASSIGN_ARGS)
{
    const uint count = (uint)cnt[3 * j];
    for (uint i = get_global_id(0); i < count; i += get_global_size(0)) {
        const int v = list[i];
        int base = lo[v];
        ulong mask;
        for (;;) {
            mask = 0ul;
            for (OFFSET_T k = indptr[v]; k < indptr[v + 1]; ++k) {
                const int c = color[indices[k]];
                if (IN_WINDOW(c, base)) mask |= 1ul << (c - base);
            }
            if (~mask) break;
            base += 64;
        }
        const int c = base + LOWEST_FREE(mask);
        tent[v] = c;
        lo[v] = c;
        stamp[v] = round;
    }
}

__kernel void spec_assign_long(ASSIGN_ARGS)
{
    __local uint lmask[2];
    const int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    const uint count = (uint)cnt[3 * j + 1];
    for (uint i = get_group_id(0); i < count; i += get_num_groups(0)) {
        const int v = list[i];
        int base = lo[v];
        ulong mask;
        for (;;) {
            if (lid == 0) lmask[0] = lmask[1] = 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            ulong m = 0ul;
            for (OFFSET_T k = indptr[v] + lid; k < indptr[v + 1]; k += wg) {
                const int c = color[indices[k]];
                if (IN_WINDOW(c, base)) m |= 1ul << (c - base);
            }
            if (m) {
                atomic_or(&lmask[0], (uint)m);
                atomic_or(&lmask[1], (uint)(m >> 32));
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            mask = (ulong)lmask[0] | ((ulong)lmask[1] << 32);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (~mask) break;
            base += 64;
        }
        if (lid == 0) {
            const int c = base + LOWEST_FREE(mask);
            tent[v] = c;
            lo[v] = c;
            stamp[v] = round;
        }
    }
}

/* Whether a neighbour of this round (stamp == round) took v's colour and outranks v. */
#define LOSES_TO(v, t, w) ((w) != (v) && stamp[w] == round && tent[w] == (t) && OUTRANKS(w, v))

__kernel void spec_resolve_short(RESOLVE_ARGS)
{
    const uint count = (uint)cnt[3 * j];
    for (uint i = get_global_id(0); i < count; i += get_global_size(0)) {
        const int v = list[i];
        const int t = tent[v];
        int lose = 0;
        for (OFFSET_T k = indptr[v]; k < indptr[v + 1] && !lose; ++k) {
            const int w = indices[k];
            lose = LOSES_TO(v, t, w);
        }
        if (lose) append(cnt, j + 1, 0, next, v, DEG(v));
        else color[v] = t;
    }
}

__kernel void spec_resolve_long(RESOLVE_ARGS)
{
    __local int llose;
    const int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    const uint count = (uint)cnt[3 * j + 1];
    for (uint i = get_group_id(0); i < count; i += get_num_groups(0)) {
        const int v = list[i];
        const int t = tent[v];
        if (lid == 0) llose = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (OFFSET_T k = indptr[v] + lid; k < indptr[v + 1]; k += wg) {
            const int w = indices[k];
            if (LOSES_TO(v, t, w)) {
                llose = 1;
                break;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            if (llose) append(cnt, j + 1, 1, next, v, DEG(v));
            else color[v] = t;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
