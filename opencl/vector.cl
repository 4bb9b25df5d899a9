/*
 * Vector helpers for the halo exchange of split memory mode (DESIGN.md §3,
 * "engine"): pack the entries another device reads, unpack what it sent.
 *   -D T=float | int     element type
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

/* dst[idx[i]] = in[i] */
__kernel void scatter(const int n, __global const int *restrict idx,
                      __global const T *restrict in, __global T *restrict dst)
{
    const int i = (int)get_global_id(0);
    if (i < n) dst[idx[i]] = in[i];
}
