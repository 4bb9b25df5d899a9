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

/* A chain of bottom-up steps armed in one launch (finepar/apps/bfs.py, BFS.pull_chain):
 * the stop flag lowered and the chain's switch test given its limit (ceil(n / beta), 0
 * never) and the size of the frontier its first step reads (int bits in fscal[0..1],
 * apps/bfs/rowop.cl's CHAIN). */
__kernel void chain_arm(const int limit, const int size, __global float *restrict fscal,
                        __global int *restrict stop)
{
    if (get_global_id(0) == 0) {
        __global int *chain = (__global int *)fscal;
        chain[0] = limit;
        chain[1] = size;
        stop[0] = 0;
    }
}
