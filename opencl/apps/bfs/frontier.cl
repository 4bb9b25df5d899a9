/* BFS top-down edge (Beamer et al., SC'12): claim an unvisited out-neighbour of the
 * frontier for level it + 1 and append it to the next frontier.
 * Concatenated before skeleton/frontier.cl. */
#define ADVANCE_ARGS __global int *level, __global int *restrict parent
#define ADVANCE_EDGE(u, k, v)                                               \
    if (level[v] < 0 && atomic_cmpxchg(&level[v], -1, it + 1) == -1) {     \
        parent[v] = (u);                                                    \
        PUSH_NEXT(v)                                                        \
    }
