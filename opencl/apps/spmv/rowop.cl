/* SpMV, y = A x: the (+, x) semiring over float32 (DESIGN.md §2). Concatenated before
 * skeleton/rowop.cl.  x: input vector; y: output.  Sums are Kahan-compensated in sequential scans. */
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
#if HAS_DATA
#define TERM(k) (VAL(k) * x[COL(k)])
#else
#define TERM(k) (x[COL(k)])
#endif
#define COMPENSATED 1
#define EPILOGUE(r, acc) y[r] = (acc);
