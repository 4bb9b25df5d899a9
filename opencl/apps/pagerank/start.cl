/* PageRank's vectors in a device's renumbered columns (finepar.engine.columns): the rows'
 * (1 / outdeg, column number) pairs the HOT_CONTRIB epilogue reads, and the first
 * contribution vector in that numbering.
 *   -D IDENTITY_PERM: the device's columns are not renumbered (column r is r). */

/* aux[r] = (bits of inv[r], perm[r]) */
__kernel void pack_aux(const int n, __global const float *restrict inv,
                       __global const int *restrict perm, __global int2 *restrict aux)
{
    const int r = (int)get_global_id(0);
#ifdef IDENTITY_PERM
    if (r < n) aux[r] = (int2)(as_int(inv[r]), r);
#else
    if (r < n) aux[r] = (int2)(as_int(inv[r]), perm[r]);
#endif
}

/* contrib[perm[r]] = pr[r] / outdeg[r], from the packed aux */
__kernel void start_contrib(const int n, __global const float *restrict pr,
                            __global const int2 *restrict aux, __global float *restrict contrib)
{
    const int r = (int)get_global_id(0);
    if (r < n) {
        const int2 a = aux[r];
        contrib[a.y] = pr[r] * as_float(a.x);
    }
}
