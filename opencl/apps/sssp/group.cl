/* SSSP's part of a small input's levels in one work-group (skeleton/grouplevels.cl,
 * concatenated after this): frontier Bellman-Ford, no piles. An edge relaxes dist[v] by an
 * atomic minimum on the float's bits (non-negative IEEE floats order as their bit
 * patterns); v, improved, joins the next list once a level (its stamp takes the level).
 * A vertex improved again after its edges were relaxed is listed again, so the run ends at
 * the float32 fixed point (apps/sssp.py). Lengths as apps/sssp/frontier.cl's: one_length
 * where it is >= 0 (no array read), else data[k], or fabs(data[k]) when abs_weights != 0. */
#define GROUP_ARGS volatile __global uint *dist, volatile __global int *stamp,      \
                   __global const float *restrict data, const int abs_weights,      \
                   const float one_length
#define GROUP_INIT(v) { dist[v] = 0x7f800000u; stamp[v] = -1; }
#define GROUP_ROOT(r) { dist[r] = 0u; }
#define GROUP_EDGE(u, v, k, d) sssp_relax((u), (v), (k), (d), dist, stamp, data, abs_weights, \
                                          one_length)

int sssp_relax(const int u, const int v, const int k, const int d, volatile __global uint *dist,
               volatile __global int *stamp, __global const float *restrict data,
               const int abs_weights, const float one_length)
{
    const float w = one_length >= 0.0f ? one_length : abs_weights ? fabs(data[k]) : data[k];
    const uint nd = as_uint(as_float(dist[u]) + w);
    if (nd < dist[v] && nd < atomic_min(&dist[v], nd))
        return atomic_xchg(&stamp[v], d + 1) != d + 1;
    return 0;
}
