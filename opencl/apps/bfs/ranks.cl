/* BFS across ranks (DESIGN.md §3, "mpi"; the 1-D distributed BFS of Buluc and Madduri,
 * SC'11, with Beamer's direction switch): every rank keeps every vertex's level, so a
 * top-down level claims only vertices no rank has visited. A level's frontier is merged
 * on the device: each rank's part (a vertex list or a run of bitmap words) arrives in a
 * staging buffer and is OR-ed into the frontier bitmap; the merged bitmap marks the
 * vertices other ranks found. */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

/* words[v / 32] |= bit v for the count vertices src[off ..] (a rank's list). */
__kernel void bits_from_list(const int count, __global const int *restrict src,
                             const int off, __global uint *words)
{
    const int i = (int)get_global_id(0);
    if (i < count) {
        const int v = src[off + i];
        atomic_or(&words[v >> 5], 1u << (v & 31));
    }
}

/* words[first + i] |= src[off + i] for i < count (a rank's run of bitmap words; the
 * parts are merged one launch after another on one queue, so no two write a word at
 * once). */
__kernel void or_words(const int count, const int first, __global const uint *restrict src,
                       const int off, __global uint *words)
{
    const int i = (int)get_global_id(0);
    if (i < count) {
        const uint b = src[off + i];
        if (b) words[first + i] |= b;
    }
}

/* A rank's own part after a bottom-up level: out[..] <- the vertices set in words[w0 ..
 * w0 + count) in order (at most cap written), hdr[0] += their number, hdr[1] += their
 * out-degrees (hdr zeroed before). A work-group's bits are placed by a scan in local
 * memory: one atomic a work-group for its base, one for its out-degrees. */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void own_part(const int count, const int w0, __global const uint *restrict words,
              __global const int *restrict outdeg, __global int *out, __global ulong *hdr,
              const int cap)
{
    __local uint scan[256];
    __local ulong edges[256];
    __local ulong base;
    const int i = (int)get_global_id(0);
    const int l = (int)get_local_id(0);
    uint b = i < count ? words[w0 + i] : 0u;
    ulong e = 0;
    for (uint t = b; t; t &= t - 1u)
        e += (ulong)outdeg[((w0 + i) << 5) + (31 - (int)clz(t & (~t + 1u)))];
    scan[l] = popcount(b);
    edges[l] = e;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 1; s < 256; s <<= 1) {  /* inclusive scan of the bits (Hillis-Steele) */
        const uint add = l >= s ? scan[l - s] : 0u;
        const ulong more = l >= s ? edges[l - s] : 0ul;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[l] += add;
        edges[l] += more;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 255) {
        base = scan[255] ? atom_add(&hdr[0], (ulong)scan[255]) : 0ul;
        if (edges[255]) atom_add(&hdr[1], edges[255]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    long at = (long)base + scan[l] - popcount(b);
    while (b) {
        const uint low = b & (~b + 1u);
        if (at < cap) out[at] = ((w0 + i) << 5) + (31 - (int)clz(low));
        at += 1;
        b ^= low;
    }
}

/* hdr[1] += the out-degrees of the count vertices src[..] (a top-down level's claims;
 * one atomic a work-group; hdr[1] zeroed before). */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void list_edges(const int count, __global const int *restrict src,
                __global const int *restrict outdeg, __global ulong *hdr)
{
    __local ulong part[256];
    const int i = (int)get_global_id(0);
    const int l = (int)get_local_id(0);
    part[l] = i < count ? (ulong)outdeg[src[i]] : 0ul;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0 && part[0]) atom_add(&hdr[1], part[0]);
}

/* counts[0] += the work-group's `size`s, counts[1] += its `edges` (`part`: 512 ulong of
 * local memory declared by the kernel). A macro: as a function called under the
 * kernel's `if (count)`, its barriers gave wrong sums on PoCL (every work-item added
 * the group's total; ranks_tally of apps/cc/ranks.cl, called unconditionally, is
 * right). */
#define MARK_TALLY(part, size, edges, counts)                                          \
    do {                                                                               \
        const int l_ = (int)get_local_id(0);                                           \
        part[l_] = (size);                                                             \
        part[256 + l_] = (edges);                                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                                  \
        for (int s_ = 128; s_ > 0; s_ >>= 1) {                                         \
            if (l_ < s_) {                                                             \
                part[l_] += part[l_ + s_];                                             \
                part[256 + l_] += part[256 + l_ + s_];                                 \
            }                                                                          \
            barrier(CLK_LOCAL_MEM_FENCE);                                              \
        }                                                                              \
        if (l_ == 0 && part[0]) {                                                      \
            atom_add(&(counts)[0], part[0]);                                           \
            atom_add(&(counts)[1], part[256]);                                         \
        }                                                                              \
    } while (0)

/* level[v] <- value for every vertex v < n set in the merged frontier bitmap `words`
 * and not yet visited; with `counts`, counts[0] += the set vertices and counts[1] +=
 * their out-degrees (summed per work-group of 256, one atomic each; out-degrees read
 * only then). Two layouts, the host picking by the frontier's size: a work-item a word
 * (mark_sparse: an empty word costs one load; a set vertex's level is a scattered
 * access) and a work-item a vertex (mark_dense: a warp's level accesses consecutive,
 * but every vertex a work-item). On an H200 at Graph500 scale 26 (2026-11-28) a word a
 * work-item took 0.014 ms for a few thousand set vertices and 1.12 ms for 28 M, a
 * vertex a work-item 0.17-0.30 ms whatever the count. */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void mark_sparse(const int n, __global const uint *restrict words, __global int *level,
                 __global const int *restrict outdeg, const int value, const int count,
                 __global ulong *counts)
{
    __local ulong part[512];
    const int w = (int)get_global_id(0);
    ulong size = 0, edges = 0;
    uint b = w < ((n + 31) >> 5) ? words[w] : 0u;
    while (b) {
        const uint low = b & (~b + 1u);
        const int v = (w << 5) + (31 - (int)clz(low));
        b ^= low;
        if (v < n) {
            if (level[v] < 0) level[v] = value;
            if (count) {
                size += 1;
                edges += (ulong)outdeg[v];
            }
        }
    }
    if (count)  /* alike in every work-item: the barriers are reached by all */
        MARK_TALLY(part, size, edges, counts);
}

__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void mark_dense(const int n, __global const uint *restrict words, __global int *level,
                __global const int *restrict outdeg, const int value, const int count,
                __global ulong *counts)
{
    __local ulong part[512];
    const int v = (int)get_global_id(0);
    ulong size = 0, edges = 0;
    if (v < n && ((words[v >> 5] >> (v & 31)) & 1u)) {
        if (level[v] < 0) level[v] = value;
        if (count) {
            size = 1;
            edges = (ulong)outdeg[v];
        }
    }
    if (count)  /* alike in every work-item: the barriers are reached by all */
        MARK_TALLY(part, size, edges, counts);
}

/* The (vertex, parent) pairs of the vertices lo .. hi - 1 (another rank's) that this
 * rank claimed, the root excepted (it has a parent wherever a top-down level claimed
 * it), and the root's children excepted (their parent is the root, which their owner
 * sets itself: root_children), appended at out[2 * counts[0] ..]; counts[slot] counts
 * this launch's (the ranks' launches run one after another, so each rank's pairs are
 * contiguous); at most cap pairs written. */
__kernel void claimed_pairs(const int lo, const int hi, const int root,
                            __global const int *restrict parent, __global int *counts,
                            const int slot, __global int *out, const int cap)
{
    const int v = lo + (int)get_global_id(0);
    if (v >= hi || v == root) return;
    const int p = parent[v];
    if (p < 0 || p == root) return;
    const int at = atomic_inc(&counts[0]);
    atomic_inc(&counts[slot]);
    if (at < cap) {
        out[2 * at] = v;
        out[2 * at + 1] = p;
    }
}

/* parent[v] <- root for this rank's vertices lo .. hi - 1 at level 1 with no parent yet:
 * the root's children, which another rank's first top-down level claimed (the root is
 * the one vertex of level 0, so it is their parent whoever claimed them; Graph500's
 * rule holds). Nothing crosses the ranks for them. */
__kernel void root_children(const int lo, const int hi, const int root,
                            __global const int *restrict level, __global int *parent)
{
    const int v = lo + (int)get_global_id(0);
    if (v < hi && level[v] == 1 && parent[v] < 0) parent[v] = root;
}

/* parent[v] <- p for the count pairs (v, p) at src[2 * (off + i)] where v has none (its
 * owner did not claim it: another rank's top-down level did, and sent the parent it
 * found). */
__kernel void set_parents(const int count, __global const int *restrict src, const int off,
                          __global int *parent)
{
    const int i = (int)get_global_id(0);
    if (i < count) {
        const int v = src[2 * (off + i)];
        if (parent[v] < 0) parent[v] = src[2 * (off + i) + 1];
    }
}
