/* HITS (Kleinberg, JACM 1999) on the stacked matrix B = [[0, A], [A^T, 0]] (2n rows): row u
 * (a hub) lists u's out-neighbours as entries n + v (authorities), row n + v (an authority)
 * lists v's in-neighbours u (hubs). The (+, second) semiring over float32. A step updates one
 * half in place from the other, networkx's power-iteration order: the authority step
 * a = A^T h, then the hub step h = A a; the other half's rows are inactive.
 *   x = y = the stacked vector (h, a), each half summing to 1;
 *   s1 = prev: the hubs before the last hub step, scaled (Chebyshev steps; hub rows only);
 *   aux = row lengths of B (float);  ia = n (first authority row);
 *   fscal[0] = the step's scale: 1 / W for an authority step, W / N for a hub step, with
 *              W = sum over the hubs of value * row length (the sum of the raw authority
 *              results) and N the sum of the hub step's results, so each new half sums to 1;
 *   fscal[1] = tol;  fscal[2] = 1: hub step, 0: authority step, 2: every row (profiling);
 *   fscal[3] = sigma, fscal[4] = beta: a Chebyshev span's shift and three-term coefficient
 *              (sigma = 0: plain power steps, prev untouched);
 *   fscal[5] = sigma / N, fscal[6] = beta_k / N, fscal[7] = 1 / N: a hub step's terms;
 *   fscal[8] = P, the sum of prev;  fscal[9] = k, Chebyshev steps since the span began;
 *   fscal[10] = W.
 * A Chebyshev hub step (finepar/apps/hits.py, Schedule) is the three-term recurrence
 *   z' = (M - sigma) z - beta_k z_prev,  M = A A^T,  beta_0 = 0, beta_1 = 2 beta, beta_k = beta,
 * on hubs z kept summing to 1: h' = (W A a - sigma h - beta_k prev) / N with prev the hubs
 * before, scaled by the last step's 1 / N, and N = W V - sigma - beta_k P (V: the sum of the
 * authority step's results, the first partial of that step).
 * Partials: the sum of the new half times row length (W of the next step after a hub step, V
 * after an authority step) and the half's L1 change.
 * DEVICE_STEP: the reduce kernel sets the next step's scalars itself and raises the stop flag
 * after a hub step whose change is below tol (one device: no host round trip). */
#define APP_FRAGMENT
typedef float acc_t;
typedef float part_t;
#define X_DECL __global const float *x /* no restrict: y is the same vector */
#define Y_DECL __global float *y
#define S0_DECL __global const float *restrict s0
#define S1_DECL __global float *restrict s1
#define S2_DECL __global const float *restrict s2
#define AUX_DECL __global const float *restrict aux
#define IDENTITY 0.0f
#define REDUCE(a, b) ((a) + (b))
#define TERM(k) (x[COL(k)])
#define COMPENSATED 1
#define NEED_PARTIALS 1
#define ROW_ACTIVE(r) (fscal[2] == 2.0f || (fscal[2] == 1.0f) == ((r) < ia))
#define EPILOGUE(r, acc) {                                  \
        const float h_ = y[r];                              \
        float v_ = (acc) * fscal[0];                        \
        if (fscal[3] != 0.0f && fscal[2] == 1.0f) {         \
            v_ -= fscal[5] * h_ + fscal[6] * s1[r];         \
            s1[r] = h_ * fscal[7];                          \
        }                                                   \
        p0 += v_ * aux[r];                                  \
        p1 += fabs(v_ - h_);                                \
        y[r] = v_;                                          \
    }
#ifdef DEVICE_STEP
#define FINISH(out) {                                       \
        const float hub_ = fscal[2];                        \
        if (hub_ == 0.0f) {                                 \
            const float w_ = fscal[10], k_ = fscal[9];      \
            const float b_ = fscal[3] == 0.0f || k_ == 0.0f ? 0.0f \
                : (k_ == 1.0f ? 2.0f * fscal[4] : fscal[4]); \
            const float inv_ = 1.0f / (w_ * (out)[0] - fscal[3] - b_ * fscal[8]); \
            fscal[0] = w_ * inv_;                           \
            fscal[5] = fscal[3] * inv_;                     \
            fscal[6] = b_ * inv_;                           \
            fscal[7] = inv_;                                \
            if (fscal[3] != 0.0f) {                         \
                fscal[8] = inv_;                            \
                fscal[9] = k_ + 1.0f;                       \
            }                                               \
        } else {                                            \
            fscal[10] = (out)[0];                           \
            fscal[0] = 1.0f / (out)[0];                     \
            if ((out)[1] < fscal[1]) stop[0] = 1;           \
        }                                                   \
        fscal[2] = 1.0f - hub_;                             \
    }
#endif
