/* Hot columns first (finepar/engine/columns.py): a share's columns renumbered by how many of
 * its entries read them, so the entries of the vector a row operation gathers by column
 * (SpMV's x) that most reads touch sit together in a few megabytes the GPU's L2 keeps.
 *
 * A column's class is 0 when no entry reads it, else c for 2^(c-1) <= reads < 2^c. The host
 * numbers the classes hottest first (base offsets); every column then takes a place of its
 * own in its class's range. Within a class the places follow the order work-groups reserve
 * them (atomics): a row still sums its entries in their stored order, so the answer does
 * not depend on it.
 *
 * -D T: the type of the vectors scatter_columns permutes (float, int or uint).
 */

#define CLASSES 33

inline int column_class(int reads) { return reads <= 0 ? 0 : 32 - (int)clz((uint)reads); }

/* counts[col] += 1 for every entry idx[0 .. count) */
__kernel void count_columns(__global const int* idx, const ulong count, __global int* counts) {
    size_t k = get_global_id(0);
    if (k < count) atomic_inc(&counts[idx[k]]);
}

/* hist[class] = columns of each class: each work-group counts in local memory first */
__kernel void class_histogram(__global const int* counts, const int n, __global int* hist) {
    __local int local_hist[CLASSES];
    int l = get_local_id(0), i = get_global_id(0);
    for (int c = l; c < CLASSES; c += get_local_size(0)) local_hist[c] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) atomic_inc(&local_hist[column_class(counts[i])]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = l; c < CLASSES; c += get_local_size(0))
        if (local_hist[c]) atomic_add(&hist[c], local_hist[c]);
}

/* perm[col]: the column's new number. next[class] starts at the class's first number; each
 * work-group reserves one range per class with one atomic and numbers its columns in it. */
__kernel void assign_columns(__global const int* counts, const int n, __global int* next,
                             __global int* perm) {
    __local int local_count[CLASSES];
    __local int local_base[CLASSES];
    int l = get_local_id(0), i = get_global_id(0);
    for (int c = l; c < CLASSES; c += get_local_size(0)) local_count[c] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    int cls = 0, rank = 0;
    if (i < n) {
        cls = column_class(counts[i]);
        rank = atomic_inc(&local_count[cls]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = l; c < CLASSES; c += get_local_size(0))
        local_base[c] = local_count[c] ? atomic_add(&next[c], local_count[c]) : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) perm[i] = local_base[cls] + rank;
}

/* out[k] = perm[idx[k]] for the entries idx[0 .. count) */
__kernel void relabel_columns(__global const int* idx, const ulong count,
                              __global const int* perm, __global int* out) {
    size_t k = get_global_id(0);
    if (k < count) out[k] = perm[idx[k]];
}

#ifdef T
/* dst[perm[i]] = src[i]: a vector indexed by column into the new numbering */
__kernel void scatter_columns(__global const T* src, __global const int* perm, const int n,
                              __global T* dst) {
    int i = get_global_id(0);
    if (i < n) dst[perm[i]] = src[i];
}
#endif
