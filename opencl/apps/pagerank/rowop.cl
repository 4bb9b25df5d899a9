/* PageRank and random walk with restart, pull form on A^T: the (+, second) semiring.
 *   pr'[r] = a * p[r] + d * sum_{u -> r} pr[u] / outdeg[u]
 * with the restart (teleport) distribution p (PERSONALIZED: s2 holds it; else uniform, and
 * the 1/n is folded into a), dangling mass spread like p (networkx's convention).
 *   x = contrib (pr / outdeg), y = pr', s0 = pr, s1 = contrib' (pr' / outdeg),
 *   s2 = p (PERSONALIZED), aux = 1 / outdeg (0 for dangling vertices),
 *   fscal[0] = a, fscal[1] = d, fscal[2] = (1 - d) * w, fscal[3] = d * w, fscal[4] = tol,
 *   with w = 1/n (uniform) or 1 (PERSONALIZED): a = fscal[2] + fscal[3] * dangling mass.
 * Partials: the L1 change |pr' - pr| and the dangling mass of pr'.
 * HOT_CONTRIB: the device's columns are renumbered hottest first (finepar.engine.columns),
 * contrib is kept in that numbering, and aux holds per row (1 / outdeg as int bits, the
 * row's column number there): the epilogue writes contrib'[perm[r]] (a scattered 4-byte
 * store a row, against a gather an entry that now mostly hits the cache).
 * PLAIN_SUMS: plain float32 sums in the sequential scans (default: Kahan-compensated).
 * NEED_PARTIALS=0 (a probe's reading only, not a correct step): no sums at all.
 * DEVICE_STEP: the reduce kernel computes the next a and raises the stop flag itself,
 * so iterations need no host round trip (one device alone). */
#define APP_FRAGMENT
typedef float acc_t;
typedef float part_t;
#define X_DECL __global const float *restrict x
#define Y_DECL __global float *restrict y
#define S0_DECL __global const float *restrict s0
#define S1_DECL __global float *restrict s1
#define S2_DECL __global const float *restrict s2
#ifdef HOT_CONTRIB
#define AUX_DECL __global const int2 *restrict aux
#define AUX_LOAD(r, io, at) { const int2 a_ = aux[r]; io = as_float(a_.x); at = a_.y; }
#else
#define AUX_DECL __global const float *restrict aux
#define AUX_LOAD(r, io, at) { io = aux[r]; at = (r); }
#endif
#define IDENTITY 0.0f
#define REDUCE(a, b) ((a) + (b))
#define TERM(k) (x[COL(k)])
#ifndef PLAIN_SUMS
#define COMPENSATED 1
#endif
#ifndef NEED_PARTIALS
#define NEED_PARTIALS 1
#endif
#ifdef PERSONALIZED
#define RESTART(r) (s2[r])
#else
#define RESTART(r) 1.0f
#endif
#define EPILOGUE(r, acc) {                                  \
        const float pr_ = fscal[0] * RESTART(r) + fscal[1] * (acc); \
        float io_;                                          \
        int at_;                                            \
        AUX_LOAD(r, io_, at_)                               \
        p0 += fabs(pr_ - s0[r]);                            \
        p1 += (io_ == 0.0f) ? pr_ : 0.0f;                   \
        y[r] = pr_;                                         \
        s1[at_] = pr_ * io_;                                \
    }
#ifdef DEVICE_STEP
#define FINISH(out) {                                       \
        fscal[0] = fscal[2] + fscal[3] * (out)[1];          \
        if ((out)[0] < fscal[4]) stop[0] = 1;               \
    }
#endif
