/* BFS across ranks (DESIGN.md §3, "mpi"; the 1-D distributed BFS of Buluc and Madduri,
 * SC'11, with Beamer's direction switch): every rank keeps every vertex's level, so a
 * top-down level claims only vertices no rank has visited; a level's merged frontier
 * marks the vertices other ranks found. */
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

/* level[ids[i]] <- value for the count vertices of a merged frontier list. */
__kernel void mark_list(const int count, __global const int *restrict ids,
                        __global int *level, const int value)
{
    const int i = (int)get_global_id(0);
    if (i < count) level[ids[i]] = value;
}

/* level[v] <- value for every vertex v < n set in the merged frontier bitmap `words`
 * and not yet visited; with `counts`, counts[0] += the set vertices and counts[1] +=
 * their out-degrees (summed per work-group of 256, one atomic each). */
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void mark_bits(const int nw, const int n, __global const uint *restrict words,
               __global int *level, __global const int *restrict outdeg, const int value,
               const int count, __global ulong *counts)
{
    __local ulong part[2][256];
    const int w = (int)get_global_id(0);
    const int l = (int)get_local_id(0);
    ulong size = 0, edges = 0;
    uint b = w < nw ? words[w] : 0u;
    while (b) {
        const uint low = b & (~b + 1u);
        const int v = (w << 5) + (31 - (int)clz(low));
        b ^= low;
        if (v < n) {
            if (level[v] < 0) level[v] = value;
            size += 1;
            edges += (ulong)outdeg[v];
        }
    }
    if (!count) return;
    part[0][l] = size;
    part[1][l] = edges;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s >>= 1) {
        if (l < s) {
            part[0][l] += part[0][l + s];
            part[1][l] += part[1][l + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0 && part[0][0]) {
        atom_add(&counts[0], part[0][0]);
        atom_add(&counts[1], part[1][0]);
    }
}

/* parent[ids[i]] <- from[i] where the vertex has none (its owner did not claim it: another
 * rank's top-down level did, and sent the parent it found). */
__kernel void set_parents(const int count, __global const int *restrict ids,
                          __global const int *restrict from, __global int *parent)
{
    const int i = (int)get_global_id(0);
    if (i < count && parent[ids[i]] < 0) parent[ids[i]] = from[i];
}
