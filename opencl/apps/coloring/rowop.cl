/* Graph colouring, Jones-Plassmann (Jones and Plassmann, SIAM J. Sci. Comput. 1993), on the
 * symmetrised graph: two row operations over int32 colours (-1: not yet coloured).
 *
 * Selection (default): an uncoloured vertex wins the round when no uncoloured neighbour has
 * a higher priority: the (max, second) semiring over the priorities of uncoloured
 * neighbours (0 for coloured ones; a self-loop brings the vertex's own priority, which
 * `<=` lets pass; priorities are distinct).
 *   x = colour, s0 = winner flag (written), s2 = degree, aux = priority (uint).
 *   Partials: winners, and the entries the step scanned.
 * -D ASSIGN: a winner takes the smallest colour in the window [ia, ia + 64) that no neighbour
 * has: the (or, second) semiring over the bits of the neighbours' colours in the window, a
 * 64-bit mask; a winner whose window is full stays uncoloured for the next window's step. In
 * place: no neighbour of a winner is a winner, so no colour a winner reads changes in the
 * round.
 *   x = y = colour, s0 = winner flag, ia = the window's first colour.
 *   Partials: winners coloured, and winners whose window was full. */
#define APP_FRAGMENT
#ifdef ASSIGN
typedef ulong acc_t;
#define IDENTITY 0ul
#else
typedef uint acc_t;
#define IDENTITY 0u
#endif
typedef long part_t;
#define X_DECL __global const int *x /* no restrict: y is the same vector */
#define Y_DECL __global int *y
#define S0_DECL __global int *restrict s0
#define S1_DECL __global int *restrict s1
#define S2_DECL __global const int *restrict s2
#define AUX_DECL __global const uint *restrict aux
#define NEED_PARTIALS 1
#ifdef ASSIGN
#define REDUCE(a, b) ((a) | (b))
#define IN_WINDOW(c) ((uint)((c) - ia) < 64u)
#define TERM(k) (IN_WINDOW(x[indices[k]]) ? (1ul << (x[indices[k]] - ia)) : 0ul)
#define ROW_ACTIVE(r) (s0[r] != 0 && x[r] < 0)
#define EPILOGUE(r, acc) {                                  \
        const ulong free_ = ~(acc);                         \
        if (free_ != 0ul) {                                 \
            y[r] = ia + 63 - (int)clz(free_ & (0ul - free_)); \
            p0 += 1;                                        \
        } else {                                            \
            p1 += 1;                                        \
        }                                                   \
    }
#else
#define REDUCE(a, b) max((a), (b))
#define TERM(k) (x[indices[k]] < 0 ? aux[indices[k]] : 0u)
#define ROW_ACTIVE(r) (x[r] < 0)
#define EPILOGUE(r, acc) {                                  \
        const int win_ = (acc) <= aux[r];                   \
        s0[r] = win_;                                       \
        p0 += win_;                                         \
        p1 += s2[r];                                        \
    }
#endif
