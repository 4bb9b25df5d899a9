/* BFS's part of a small input's levels in one work-group (skeleton/grouplevels.cl,
 * concatenated after this): top-down, an edge to an unvisited v claims it; the winner sets
 * level[v] and parent[v] and lists v. Levels and parents start at -1, the root's its own.
 *
 * Where the input's visited bitmap fits in local memory (seen_local != 0; the host sizes
 * it, finepar/engine/grouplevels.py), a claim is an atomic_or on its word there: no
 * global read and compare-and-swap on the level's chain of dependent reads. Else the
 * claim is a compare-and-swap on level[v]. */
#define GROUP_ARGS volatile __global int *level, __global int *parent,                  \
                   volatile __local uint *seen, const int seen_local
#define GROUP_INIT(v)                                                                   \
    {                                                                                   \
        level[v] = -1;                                                                  \
        parent[v] = -1;                                                                 \
        if (seen_local && ((v) & 31) == 0) seen[(v) >> 5] = 0u;                         \
    }
#define GROUP_ROOT(r)                                                                   \
    {                                                                                   \
        level[r] = 0;                                                                   \
        parent[r] = r;                                                                  \
        if (seen_local) seen[(r) >> 5] |= 1u << ((r) & 31);                             \
    }
#define GROUP_EDGE(u, v, k, d) bfs_claim((u), (v), (d), level, parent, seen, seen_local)

int bfs_claim(const int u, const int v, const int d, volatile __global int *level,
              __global int *parent, volatile __local uint *seen, const int seen_local)
{
    if (seen_local) {
        const uint bit = 1u << (v & 31);
        if ((seen[v >> 5] & bit) || (atomic_or(&seen[v >> 5], bit) & bit))
            return 0;
        level[v] = d + 1;
        parent[v] = u;
        return 1;
    }
    if (level[v] == -1 && atomic_cmpxchg(&level[v], -1, d + 1) == -1) {
        parent[v] = u;
        return 1;
    }
    return 0;
}
