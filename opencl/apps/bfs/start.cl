/* A BFS run's start on one device in one launch (DESIGN.md §3, "BFS"): every level and
 * parent -1 but the root's (its level 0, its own parent), where `vectors`; both frontier
 * bitmaps cleared, where `bitmaps`. Four fills and two single-entry writes, each an
 * enqueue the host pays for, become one. */
__kernel void bfs_start(const int n, const int words, const int root, const int vectors,
                        const int bitmaps, __global int *restrict level,
                        __global int *restrict parent, __global uint *restrict front,
                        __global uint *restrict next)
{
    const int i = (int)get_global_id(0);
    if (vectors && i < n) {
        level[i] = i == root ? 0 : -1;
        parent[i] = i == root ? root : -1;
    }
    if (bitmaps && i < words) {
        front[i] = 0u;
        next[i] = 0u;
    }
}
