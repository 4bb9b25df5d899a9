/* BFS's part of a small input's levels in one work-group (skeleton/grouplevels.cl,
 * concatenated after this): top-down, an edge to an unvisited v claims it by
 * compare-and-swap on level[v]; the winner sets parent[v] and lists v. Levels and parents
 * start at -1, the root's its own. */
#define GROUP_ARGS volatile __global int *level, __global int *parent
#define GROUP_INIT(v) { level[v] = -1; parent[v] = -1; }
#define GROUP_ROOT(r) { level[r] = 0; parent[r] = r; }
#define GROUP_EDGE(u, v, k, d) bfs_claim((u), (v), (d), level, parent)

int bfs_claim(const int u, const int v, const int d, volatile __global int *level,
              __global int *parent)
{
    if (level[v] == -1 && atomic_cmpxchg(&level[v], -1, d + 1) == -1) {
        parent[v] = u;
        return 1;
    }
    return 0;
}
