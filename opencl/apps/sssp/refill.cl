/* SSSP's far-pile refill as a kernel of its own, for batches of `advance` launches: one
 * work-group before level j of a batch; a no-op unless list j is empty and the far pile
 * is not (opencl/sssp.cl, FAR_REFILL). Concatenated after skeleton/frontier.cl. */
__kernel void far_refill(const int j, __global const OFFSET_T *restrict indptr, NEXT_ARGS,
                         const int it, ADVANCE_ARGS)
{
    __local int lmin_, lkeep_;
    const int lid = (int)get_local_id(0);
    const ulong t = tallies[STATE + j];
    if (IS_MARK(t) || TALLY_SIZE(t) != 0 || FAR_COUNT == 0) return;
    __global ulong *tally = tallies + STATE + j;
    FAR_REFILL((int)get_local_size(0))
}
