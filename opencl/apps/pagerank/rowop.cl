/* PageRank and random walk with restart, pull form on A^T: the (+, second) semiring.
 *   pr'[r] = a * p[r] + d * sum_{u -> r} pr[u] / outdeg[u]
 * with the restart (teleport) distribution p (PERSONALIZED: s2 holds it; else uniform, and
 * the 1/n is folded into a), dangling mass spread like p (networkx's convention).
 *   x = contrib (pr / outdeg), y = pr', s0 = pr, s1 = contrib' (pr' / outdeg),
 *   s2 = p (PERSONALIZED), aux = 1 / outdeg (0 for dangling vertices),
 *   fscal[0] = a, fscal[1] = d, fscal[2] = (1 - d) * w, fscal[3] = d * w, fscal[4] = tol,
 *   with w = 1/n (uniform) or 1 (PERSONALIZED): a = fscal[2] + fscal[3] * dangling mass.
 * Partials: the L1 change |pr' - pr| and the dangling mass of pr'.
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
#define AUX_DECL __global const float *restrict aux
#define IDENTITY 0.0f
#define REDUCE(a, b) ((a) + (b))
#define TERM(k) (x[indices[k]])
#define COMPENSATED 1
#define NEED_PARTIALS 1
#ifdef PERSONALIZED
#define RESTART(r) (s2[r])
#else
#define RESTART(r) 1.0f
#endif
#define EPILOGUE(r, acc) {                                  \
        const float pr_ = fscal[0] * RESTART(r) + fscal[1] * (acc); \
        const float io_ = aux[r];                           \
        p0 += fabs(pr_ - s0[r]);                            \
        p1 += (io_ == 0.0f) ? pr_ : 0.0f;                   \
        y[r] = pr_;                                         \
        s1[r] = pr_ * io_;                                  \
    }
#ifdef DEVICE_STEP
#define FINISH(out) {                                       \
        fscal[0] = fscal[2] + fscal[3] * (out)[1];          \
        if ((out)[0] < fscal[4]) stop[0] = 1;               \
    }
#endif
