/* Single-source shortest paths, push step of frontier Bellman-Ford with near and far piles
 * (Davidson, Baxter, Garland and Owens, IPDPS 2014: near-far; cuGraph's SSSP): every
 * out-edge u -> v of the frontier relaxes dist[v] by an atomic minimum on the float's bits
 * (non-negative IEEE floats, +0 to +inf, order as their int bit patterns do). A vertex this
 * level improved joins the next frontier (the near pile) once (its stamp takes the level
 * `it`) when its new distance is below the threshold, else the far pile once per epoch (its
 * far stamp takes the epoch). When the near pile is empty, the far pile's least distance m
 * sets the threshold to m + delta and the far vertices below it move to the near pile
 * (far_refill in apps/sssp/refill.cl; LOCAL_REFILL inside advance_local).
 *   weights: one_length where it is >= 0 (every edge's length: no array read; a pattern
 *   graph uploads none), else data[k], or fabs(data[k]) when abs_weights != 0.
 *   App state (tallies[0 .. 2], opencl/frontier.cl's STATE words): the far pile's count,
 *   the threshold's float bits, the epoch (whose parity picks far0 or far1).
 * Concatenated before skeleton/frontier.cl. */
#define ADVANCE_ARGS __global float *dist, __global int *stamp,                   \
                     __global const float *restrict data, const int abs_weights,  \
                     __global int *fstamp, __global int *far0, __global int *far1, \
                     const float delta, const float one_length
#define FAR_COUNT tallies[0]
#define THRESHOLD as_float((uint)tallies[1])
#define EPOCH ((int)tallies[2])
#define FAR_PUSH(v) {                                                             \
        const int ep_ = EPOCH;                                                    \
        if (atomic_xchg(&fstamp[v], ep_) != ep_) {                                \
            const uint p_ = (uint)atom_inc(&FAR_COUNT);                           \
            ((ep_ & 1) ? far1 : far0)[p_] = (v);                                  \
        }                                                                         \
    }
#define ADVANCE_EDGE(u, k, v) {                                                   \
        const float w_ = one_length >= 0.0f ? one_length                          \
                         : abs_weights ? fabs(data[k]) : data[k];                 \
        const float nd_ = dist[u] + w_;                                           \
        if (nd_ < dist[v]) {                                                      \
            const int old_ = atomic_min((volatile __global int *)&dist[v], as_int(nd_)); \
            if (nd_ < as_float(old_)) {                                           \
                if (nd_ < THRESHOLD) {                                            \
                    if (atomic_xchg(&stamp[v], it) != it) PUSH_NEXT(v)            \
                } else FAR_PUSH(v)                                                \
            }                                                                     \
        }                                                                         \
    }

/* The far pile -> the near pile (the list PUSH_NEXT appends to), by one work-group of
 * `group_` work-items (local id lid): the least far distance m at or above the threshold
 * (smaller ones were improved since and went through the near pile), the threshold m +
 * delta, then every far vertex below it joins the near pile (stamped it - 1, the level that
 * made the list) and the rest the other far pile (the next epoch). Needs __local int
 * lmin_, lkeep_ (LOCAL_DECLS). */
#define FAR_REFILL(group_) {                                                      \
        const uint cnt_ = (uint)FAR_COUNT;                                        \
        const float thr_ = THRESHOLD;                                             \
        const int ep_ = EPOCH;                                                    \
        __global const int *src_ = (ep_ & 1) ? far1 : far0;                       \
        __global int *dst_ = (ep_ & 1) ? far0 : far1;                             \
        if (lid == 0) { lmin_ = INT_MAX; lkeep_ = 0; }                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                             \
        for (uint i_ = lid; i_ < cnt_; i_ += (group_)) {                          \
            const float d_ = dist[src_[i_]];                                      \
            if (d_ >= thr_) atomic_min(&lmin_, as_int(d_));                       \
        }                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                             \
        const int m_ = lmin_;                                                     \
        if (m_ != INT_MAX) {                                                      \
            const float nthr_ = as_float(m_) + delta;                             \
            for (uint i_ = lid; i_ < cnt_; i_ += (group_)) {                      \
                const int v = src_[i_];                                           \
                const float d_ = dist[v];                                         \
                if (d_ >= thr_ && d_ < nthr_) {                                   \
                    if (atomic_xchg(&stamp[v], it - 1) != it - 1) PUSH_NEXT(v)    \
                } else if (d_ >= nthr_) {                                         \
                    dst_[atomic_inc(&lkeep_)] = v;                                \
                    fstamp[v] = ep_ + 1;                                          \
                }                                                                 \
            }                                                                     \
        }                                                                         \
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);                      \
        if (lid == 0) {                                                           \
            FAR_COUNT = (ulong)lkeep_;                                            \
            if (m_ != INT_MAX) {                                                  \
                tallies[1] = (ulong)as_uint(as_float(m_) + delta);                \
                tallies[2] = (ulong)(ep_ + 1);                                    \
            }                                                                     \
        }                                                                         \
    }
#define LOCAL_DECLS __local int lmin_, lkeep_;
#define LOCAL_REFILL if (FAR_COUNT) FAR_REFILL(LWG)
