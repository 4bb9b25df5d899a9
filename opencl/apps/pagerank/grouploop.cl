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
 * Each row's entries are cut into segments of at most a fixed length (seg_ptr: segment g
 * holds entries seg_ptr[g] .. seg_ptr[g + 1] - 1 of row seg_row[g]; an empty row has one
 * empty segment), so a long row spreads over many work-items instead of stalling one.
 * The work-items share the segments: one that is its row's only segment finishes the row;
 * the others leave their sums in part[g]. Where some row has several (n_long of them,
 * long_rows; long_seg[2i] .. long_seg[2i + 1] - 1 their segments), a barrier, then the
 * work-items share those rows, adding their segments' sums. Sums are Kahan-compensated
 * (PLAIN_SUMS: plain). Each iteration's L1 change and dangling mass are summed by a tree
 * in local memory (the work-group's size a power of two), and the loop stops once the
 * change is below tol or after max_iter.
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

/* Row r's new score from the sum of its terms: the outputs, and the iteration's sums. */
#define FINISH_ROW(r, sum) {                                  \
        const float v_ = a * RESTART(r) + d * (sum);          \
        const float io_ = inv_outdeg[r];                      \
        change += fabs(v_ - cur[r]);                          \
        mass += (io_ == 0.0f) ? v_ : 0.0f;                    \
        nxt[r] = v_;                                          \
        c_nxt[r] = v_ * io_;                                  \
    }

__kernel void pagerank_group_loop(const int n_seg, const int max_iter, const int n_long,
                                  __global const int *restrict seg_ptr,
                                  __global const int *restrict seg_row,
                                  __global const int *restrict long_rows,
                                  __global const int *restrict long_seg,
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
        float change = 0.0f, mass = 0.0f;
        for (int g = lid; g < n_seg; g += size) {
            float acc = 0.0f, comp = 0.0f;
            const int end = seg_ptr[g + 1];
            for (int k = seg_ptr[g]; k < end; ++k)
                ADD(acc, comp, c_cur[indices[k]])
            const int r = seg_row[g];
            if (r >= 0)
                FINISH_ROW(r, acc - comp)
            else
                part[g] = acc - comp;
        }
        if (n_long) {
            barrier(CLK_GLOBAL_MEM_FENCE);
            for (int i = lid; i < n_long; i += size) {
                float acc = 0.0f, comp = 0.0f;
                const int end = long_seg[2 * i + 1];
                for (int g = long_seg[2 * i]; g < end; ++g)
                    ADD(acc, comp, part[g])
                FINISH_ROW(long_rows[i], acc - comp)
            }
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
