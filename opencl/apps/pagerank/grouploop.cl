/* PageRank and random walk with restart, every iteration in one work-group's launch
 * (finepar/apps/powerloop.py; issue 29): for an input so small that a launch and a host
 * round trip a step cost more than the step itself.
 *
 * The same iteration as rowop.cl's, pull form on A^T (its CSR in the input's numbering):
 *   pr'[r] = a * p[r] + d * sum_{u -> r} contrib[u],   contrib'[r] = pr'[r] / outdeg[r]
 * with fscal[0] = a (this iteration's base term), fscal[1] = d, fscal[2] = (1 - d) * w,
 * fscal[3] = d * w, fscal[4] = tol, as rowop.cl reads them; the next base term is
 * fscal[2] + fscal[3] * (the dangling mass of pr').
 *
 * Each row's entries are cut into segments of at most a fixed length (seg_ptr: segment s
 * holds entries seg_ptr[s] .. seg_ptr[s + 1] - 1; row_seg: row r's segments are
 * row_seg[r] .. row_seg[r + 1] - 1), so a long row spreads over many work-items instead
 * of stalling one. An iteration has two phases: the work-items share the segments, each
 * segment's sum going to part[s]; then they share the rows, each row adding its
 * segments' sums. Sums are Kahan-compensated (PLAIN_SUMS: plain). Each iteration's L1
 * change and dangling mass are summed by a tree in local memory (the work-group's size a
 * power of two), and the loop stops once the change is below tol or after max_iter.
 *
 * out (uint): [0] iterations run, [1] 1 where converged, [2 + i] iteration i's L1 change
 * (float bits). Iteration i reads pr / contrib when i is even, pr_next / contrib_next
 * when odd, and writes the other pair: after k iterations the scores are in pr_next when
 * k is odd. */

#ifdef PLAIN_SUMS
#define ADD(acc, comp, x) { acc += (x); }
#else
#define ADD(acc, comp, x) {                                   \
        const float y_ = (x) - comp;                          \
        const float t_ = acc + y_;                            \
        comp = (t_ - acc) - y_;                               \
        acc = t_;                                             \
    }
#endif

#ifdef PERSONALIZED
#define RESTART(r) (restart[r])
#else
#define RESTART(r) 1.0f
#endif

__kernel void pagerank_group_loop(const int n, const int max_iter, const int n_seg,
                                  __global const int *restrict seg_ptr,
                                  __global const int *restrict row_seg,
                                  __global const int *restrict indices,
                                  __global float *restrict part,
                                  __global const float *restrict inv_outdeg,
                                  __global const float *restrict restart,
                                  __global float *pr, __global float *pr_next,
                                  __global float *contrib, __global float *contrib_next,
                                  __global const float *restrict fscal,
                                  __global uint *restrict out, __local float *red)
{
    const int lid = get_local_id(0), size = get_local_size(0);
    const float d = fscal[1], base = fscal[2], dw = fscal[3], tol = fscal[4];
    float a = fscal[0];
    __global float *cur = pr, *nxt = pr_next, *c_cur = contrib, *c_nxt = contrib_next;
    int it = 0, converged = 0;
    while (it < max_iter) {
        for (int g = lid; g < n_seg; g += size) {
            float acc = 0.0f, comp = 0.0f;
            const int end = seg_ptr[g + 1];
            for (int k = seg_ptr[g]; k < end; ++k)
                ADD(acc, comp, c_cur[indices[k]])
            part[g] = acc - comp;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        float change = 0.0f, mass = 0.0f;
        for (int r = lid; r < n; r += size) {
            float acc = 0.0f, comp = 0.0f;
            const int end = row_seg[r + 1];
            for (int g = row_seg[r]; g < end; ++g)
                ADD(acc, comp, part[g])
            const float v = a * RESTART(r) + d * acc;
            const float io = inv_outdeg[r];
            change += fabs(v - cur[r]);
            mass += (io == 0.0f) ? v : 0.0f;
            nxt[r] = v;
            c_nxt[r] = v * io;
        }
        red[lid] = change;
        red[size + lid] = mass;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        for (int s = size / 2; s > 0; s >>= 1) {
            if (lid < s) {
                red[lid] += red[lid + s];
                red[size + lid] += red[size + lid + s];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        change = red[0];
        mass = red[size];
        barrier(CLK_LOCAL_MEM_FENCE);  /* every work-item has read the sums */
        if (lid == 0)
            out[2 + it] = as_uint(change);
        a = base + dw * mass;
        __global float *t = cur; cur = nxt; nxt = t;
        t = c_cur; c_cur = c_nxt; c_nxt = t;
        ++it;
        if (change < tol) {
            converged = 1;
            break;
        }
    }
    if (lid == 0) {
        out[0] = (uint)it;
        out[1] = (uint)converged;
    }
}
