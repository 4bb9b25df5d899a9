/*
 * Vector helpers: the halo exchange of split memory mode (DESIGN.md §3, "engine"): pack
 * the entries another device reads, unpack what it sent; and initialising vectors on the
 * device (no host array, no transfer).
 *   -D T=float | int | uint     element type
 */
#ifndef T
#error "T must be defined"
#endif

/* out[i] = src[idx[i]] */
__kernel void gather(const int n, __global const int *restrict idx,
                     __global const T *restrict src, __global T *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i < n) out[i] = src[idx[i]];
}

/* out[at + i] = src[idx[i]]: a gather into a region at word offset at */
__kernel void gather_to(const int n, __global const int *restrict idx,
                        __global const T *restrict src, __global T *restrict out,
                        const int at)
{
    const int i = (int)get_global_id(0);
    if (i < n) out[at + i] = src[idx[i]];
}

/* dst[idx[i]] = in[i] */
__kernel void scatter(const int n, __global const int *restrict idx,
                      __global const T *restrict in, __global T *restrict dst)
{
    const int i = (int)get_global_id(0);
    if (i < n) dst[idx[i]] = in[i];
}

/* out[i] = i */
__kernel void iota(const int n, __global T *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i < n) out[i] = (T)i;
}

/* out[i] = a[i] * b[i] */
__kernel void multiply(const int n, __global const T *restrict a, __global const T *restrict b,
                       __global T *restrict out)
{
    const int i = (int)get_global_id(0);
    if (i < n) out[i] = a[i] * b[i];
}

/* out[i] = 0 unless stop[0] != 0: a buffer cleared for the next step of a chain stopped on
 * the device only where that step runs (finepar/apps/bfs.py's chained bottom-up steps) */
__kernel void zero_unless_stopped(const int n, __global T *restrict out,
                                  __global const int *restrict stop)
{
    if (stop[0] != 0) return;
    const int i = (int)get_global_id(0);
    if (i < n) out[i] = (T)0;
}
