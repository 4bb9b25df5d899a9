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

/* A chain enqueued behind the run's first top-down level, before the host has read that
 * level's list (finepar/apps/bfs.py, BFS.push_levels): from the list's tally
 * (tallies[state], `edge_bits` of out-degrees under its size) the device applies Beamer's
 * switch in integers (edges > t_alpha = floor(unexplored / (alpha + 1)) and edges > t_beta
 * = floor(n / beta)), lowers the stop flag only where it pulls, and gives the chain's own
 * switch test its limit and the list's size (chain_arm). */
__kernel void chain_arm_from_tally(__global const ulong *restrict tallies, const int state,
                                   const int edge_bits, const long t_alpha, const long t_beta,
                                   const int limit, __global float *restrict fscal,
                                   __global int *restrict stop)
{
    if (get_global_id(0) == 0) {
        const ulong t = tallies[state];
        const long edges = (long)(t & (((ulong)1 << edge_bits) - 1));
        __global int *chain = (__global int *)fscal;
        chain[0] = limit;
        chain[1] = (int)(t >> edge_bits);
        stop[0] = (edges > t_alpha && edges > t_beta) ? 0 : 1;
    }
}

/* bm <- the vertices of a list whose size is read from its tally (bm zeroed before); the
 * grid covers the list's largest possible size. */
__kernel void bits_from_tally(__global const ulong *restrict tallies, const int state,
                              const int edge_bits, __global const int *restrict q,
                              __global uint *bm)
{
    const int i = (int)get_global_id(0);
    if (i < (int)(tallies[state] >> edge_bits)) atomic_or(&bm[q[i] >> 5], 1u << (q[i] & 31));
}
