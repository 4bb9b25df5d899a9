/* Connected components, FastSV's edge phase (Zhang, Azad and Hu, 2020): on the symmetrised
 * graph, the smallest grandparent label among each vertex's neighbours, the (min, second)
 * semiring over int32.  x = gf (grandparent of every vertex), y = mn (the minimum found).
 * The vertex phase (hooking, shortcutting) is in apps/cc/frontier.cl. */
#define APP_FRAGMENT
typedef int acc_t;
typedef int part_t;
#define X_DECL __global const int *restrict x
#define Y_DECL __global int *restrict y
#define S0_DECL __global const int *restrict s0
#define S1_DECL __global int *restrict s1
#define S2_DECL __global const int *restrict s2
#define AUX_DECL __global const int *restrict aux
#define IDENTITY INT_MAX
#define REDUCE(a, b) min((a), (b))
#define TERM(k) (x[indices[k]])
#define EPILOGUE(r, acc) y[r] = (acc);
