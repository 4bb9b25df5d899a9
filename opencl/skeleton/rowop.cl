/*
 * FinePar's one row operation (DESIGN.md §2, throttling-atc18 §2.1), the skeleton every
 * app shares:
 *
 *     acc_s = REDUCE_{k in segment s} TERM(k)            for every segment s of a launch,
 *
 * then either the app's per-row EPILOGUE (a segment that is a whole row: the FUSED path) or a
 * store of acc_s into an accumulator slot (a segment that is part of a row: a row split by
 * throttling's partitions or cut for load balance): the ACCUMULATE / APPLY phases. The APPLY
 * runs in the same launches, not a launch of its own: the row's last segment to finish
 * (a counter a cut row, counted after a global fence) folds its slots in order and runs the
 * EPILOGUE once (the last-block pattern of CUDA's threadFenceReduction sample).
 *
 * The app's fragment (opencl/app_*.cl, concatenated before this file) defines the semiring
 * and the epilogue:
 *   typedef acc_t, part_t;  X_DECL Y_DECL S0_DECL S1_DECL S2_DECL AUX_DECL (argument types)
 *   IDENTITY, REDUCE(a, b), TERM(k) (contribution of stored entry k), EPILOGUE(r, acc)
 *   optional: ROW_ACTIVE(r) (1), SCAN_DONE(acc) (0: no early exit; defined, a team's
 *             lanes stop together: TEAM_SCAN), NEED_PARTIALS (0),
 *             COMPENSATED (0: Kahan summation in sequential scans of float sums),
 *             FINISH(out) (work the reduce kernel does with the step's two sums)
 *
 * Specialised by -D options (pyopencl's on-disk cache keys each variant):
 *   MAPPING=0 ITEM   one work-item per segment                      (short rows)
 *   MAPPING=1 TEAM   a team of LANES work-items per segment          (medium rows)
 *   MAPPING=2 GROUP  one work-group per segment                      (long rows)
 *   MAPPING=3 STREAM a work-group per block of consecutive segments (CSR-adaptive: the
 *                    block's entries are staged in local memory with coalesced loads, then
 *                    each segment is reduced by a team sized to the block)
 *   MAPPING=4 ELL    one work-item per row of an ELL-format share (column-major, -1 padding;
 *                    seg_ptr[1] is the width)
 *   MAPPING=5 DYNAMIC  persistent work-groups taking row chunks from a counter shared by
 *                    both devices (the dynamic baseline; DYN_BACK: from the back)
 *   WG       work-group size (power of two);  LANES  team size of MAPPING 1
 *   BLOCK_NNZ  local-memory capacity of MAPPING 3, in entries
 *   COMPACT  1: seg_ptr is indexed by segment (a compacted CSR of this share);
 *            0: by the segment's global row (the whole CSR; segments are whole rows)
 *   OFFSET_T int | long: type of seg_ptr (long once a share holds 2**31 entries or more)
 *   HAS_SLOTS 1: seg_slot[s] >= 0 sends segment s to an accumulator slot
 *   HAS_DATA  1: the matrix has values (data[k]); 0: pattern
 *   STOP_FLAG 1: a launch returns at once when stop[0] != 0 (device-side convergence)
 *   FOLD_SUMS 1: the step's last launch, whose last work-group folds the step's sums
 *            (FOLD_STEP_SUMS; with NEED_PARTIALS and SG_SHFL)
 *   SG_SHFL, SG_SIZE  teams reduce with sub-group shuffles (below)
 *
 * Arguments (the same for every app, named once in finepar/engine/launches.py; those of
 * an option a program is built without are left out of it: the slots' five without
 * HAS_SLOTS, blk_ptr outside MAPPING 3 and 5, queue without QUEUE or MAPPING 5, the four
 * of FOLD_SUMS without it; ALL_ARGS=1 declares them all, for probes):
 *   nseg, base      segments of this launch: base .. base + nseg - 1 (MAPPING 3: blocks)
 *   seg_row         global row of each segment
 *   seg_ptr         segment (COMPACT) or row (not COMPACT) pointers into indices / data
 *   indices, data   the share's CSR (ELL: column-major slots, width = nseg's stride)
 *   x, y, s0, s1, s2, aux   app vectors, indexed by global row / column id
 *   fscal           app scalars on the device (e.g. PageRank's base term and damping)
 *   ia              an integer scalar (BFS: the level; CC: the round)
 *   partials        two part_t per work-group at 2*(part_offset + group)
 *   part_offset
 *   seg_slot, seg_acc   accumulator slot of each segment (HAS_SLOTS) and the slots
 *   slot_row        HAS_SLOTS: the cut row (its index j) each slot belongs to
 *   slot_ptr        cut row j owns slots slot_ptr[j] .. slot_ptr[j+1]
 *   slot_done       cut row j's finished segments this step (zero between steps: the
 *                   folding work-item sets it back)
 *   blk_ptr         MAPPING 3: block b holds segments blk_ptr[b] .. blk_ptr[b+1]; the
 *                   launch runs blocks base .. base + nseg - 1
 *   stop            STOP_FLAG: the device-side "converged" flag
 *   queue           QUEUE: the block counter of a queue launch (zeroed before it)
 *   sums_out, sums_slot  FOLD_SUMS: the step's two sums go to sums_out[2 * sums_slot]
 *   n_part          FOLD_SUMS: the step's partial pairs (work-groups over its launches)
 *   sums_done       FOLD_SUMS: the launch's finished work-groups (zero between steps)
 */

#ifndef WG
#error "WG must be defined"
#endif
#ifndef MAPPING
#define MAPPING 0
#endif
#ifndef COMPACT
#define COMPACT 0
#endif
#ifndef HAS_DATA
#define HAS_DATA 0
#endif
#ifndef HAS_SLOTS
#define HAS_SLOTS 0
#endif
#ifndef OFFSET_T
#define OFFSET_T int
#endif
#ifndef STOP_FLAG
#define STOP_FLAG 0
#endif
#ifndef ROW_ACTIVE
#define ROW_ACTIVE(r) 1
#endif
#ifndef SCAN_DONE
#define SCAN_DONE(acc) 0
#define EARLY_EXIT 0
#else
#define EARLY_EXIT 1
#endif
#ifndef NEED_PARTIALS
#define NEED_PARTIALS 0
#endif
#ifndef COMPENSATED
#define COMPENSATED 0
#endif
#ifndef FINISH
#define FINISH(out)
#endif
#ifndef BLOCK_NNZ
#define BLOCK_NNZ (4 * WG)
#endif
#ifndef QUEUE
#define QUEUE 0
#endif
#ifndef FOLD_SUMS
#define FOLD_SUMS 0
#endif
#ifndef DYN_BACK
#define DYN_BACK 0
#endif
#if EARLY_EXIT && COMPENSATED
#error "a compensated sum has no early exit (SCAN_DONE)"
#endif
#if !defined(APP_FRAGMENT)
#error "an app fragment (opencl/app_*.cl) must come before skeleton/rowop.cl"
#endif

#if MAPPING == 1
#ifndef LANES
#error "MAPPING=1 needs LANES"
#endif
#define TEAM LANES
#elif MAPPING == 2
#define TEAM WG
#endif

/* A program declares only the arguments its options use (each costs NVIDIA's enqueue
 * about 0.25 us a launch); finepar/engine/launches.py's rowop_signature drops the same. */
#ifndef ALL_ARGS
#define ALL_ARGS 0
#endif
#if HAS_SLOTS || ALL_ARGS
#define SLOT_ARGS                                                            \
    __global const int *restrict seg_slot,                                   \
    __global acc_t *restrict seg_acc,                                        \
    __global const int *restrict slot_row,                                   \
    __global const int *restrict slot_ptr,                                   \
    volatile __global int *restrict slot_done,
#else
#define SLOT_ARGS
#endif
#if MAPPING == 3 || MAPPING == 5 || ALL_ARGS
#define BLK_ARGS __global const int *restrict blk_ptr,
#else
#define BLK_ARGS
#endif
#if QUEUE || MAPPING == 5 || ALL_ARGS
#define QUEUE_ARGS , __global int *restrict queue
#else
#define QUEUE_ARGS
#endif
#if FOLD_SUMS || ALL_ARGS
#define FOLD_ARGS                                                            \
    , __global part_t *restrict sums_out, const int sums_slot, const int n_part, \
    volatile __global int *restrict sums_done
#else
#define FOLD_ARGS
#endif

#define ROWOP_ARGS                                                           \
    const int nseg, const int base,                                          \
    __global const int *restrict seg_row,                                    \
    __global const OFFSET_T *restrict seg_ptr,                               \
    __global const int *restrict indices,                                    \
    __global const float *restrict data,                                     \
    X_DECL, Y_DECL, S0_DECL, S1_DECL, S2_DECL, AUX_DECL,                     \
    __global float *restrict fscal, const int ia,                            \
    __global part_t *restrict partials, const int part_offset,               \
    SLOT_ARGS                                                                \
    BLK_ARGS                                                                 \
    __global int *restrict stop                                              \
    QUEUE_ARGS                                                               \
    FOLD_ARGS

/* ------------------------------------------------------------ the entries' loads */
/* COL(k), VAL(k): entry k's column index and value, read once a step. Where the host built
 * for NVIDIA's driver (PTX_LOADS) they are loaded evict-first (PTX's ld.global.cs, CUDA's
 * __ldcs), so that L1 keeps the vector the entries gather: the scale-24 product is bound by
 * L2's throughput, and every gather L1 serves is a sector L2 does not (Nsight Compute on
 * the CUDA prototype, benchmarks/probe_spmv_bound.py, runs/h200-2026-11-29zg: 4% faster). */
#ifndef PTX_LOADS
#define PTX_LOADS 0
#endif
#if PTX_LOADS
inline int col_cs(__global const int *p)
{
    int v;
    asm("ld.global.cs.s32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}
inline float val_cs(__global const float *p)
{
    float v;
    asm("ld.global.cs.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
#define COL(k) col_cs(indices + (k))
#define VAL(k) val_cs(data + (k))
#else
#define COL(k) (indices[k])
#define VAL(k) (data[k])
#endif

/* ------------------------------------------------------------ sequential scans */
/* acc = REDUCE over entries k0, k0+step, ... < k1 of TERM(k); Kahan-compensated for
 * float sums (a work-item summing a 55,252-entry row in plain float32 drifted a
 * PageRank's total to 0.99998), stopping early where the app allows. */
#if COMPENSATED
#define SCAN(acc, k0, k1, step)                                              \
    {                                                                        \
        acc_t c_ = 0;                                                        \
        for (OFFSET_T k = (k0); k < (k1); k += (step)) {                     \
            const acc_t y_ = TERM(k) - c_;                                   \
            const acc_t t_ = acc + y_;                                       \
            c_ = (t_ - acc) - y_;                                            \
            acc = t_;                                                        \
        }                                                                    \
    }
#else
#define SCAN(acc, k0, k1, step)                                              \
    for (OFFSET_T k = (k0); k < (k1); k += (step)) {                         \
        acc = REDUCE(acc, TERM(k));                                          \
        if (SCAN_DONE(acc)) break;                                           \
    }
#endif

/* A team's strided scan of one segment, lanes from k0 + lane by `step`, that stops early
 * together: a lane whose term is done records its position in the segment in `*hit` (local
 * memory, atomic min) and every lane stops before a position past the least recorded one.
 * No lane skips a position before the segment's first done term, so the team's reduction
 * still sees that term (the sequential scan's stop, whatever the team size: BFS picks the
 * same parent). No barrier: a lane that reads `*hit` late only scans further. */
#if EARLY_EXIT
#define TEAM_SCAN(acc, k0, lane, k1, step, hit)                              \
    {                                                                        \
        const OFFSET_T kb_ = (k0);                                           \
        for (OFFSET_T k = kb_ + (lane); k < (k1); k += (step)) {             \
            const int pos_ = (int)(k - kb_);                                 \
            if (pos_ > *(hit)) break;                                        \
            acc = REDUCE(acc, TERM(k));                                      \
            if (SCAN_DONE(acc)) { atomic_min((hit), pos_); break; }          \
        }                                                                    \
    }
#endif

/* A fence over the whole device between a work-item's global writes and its next accesses.
 * OpenCL 1.2's mem_fence orders them for its own work-group only, and NVIDIA's compiler
 * emits PTX's membar.cta for it (benchmarks/runs/h200-2026-11-29b): where the host built
 * for NVIDIA's driver (PTX_FENCE) it is membar.gl, CUDA's __threadfence(). */
#ifndef PTX_FENCE
#define PTX_FENCE 0
#endif
#if PTX_FENCE
#define DEVICE_FENCE() asm volatile("membar.gl;" ::: "memory")
#else
#define DEVICE_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
#endif

/* A finished segment: its row's epilogue, or its accumulator slot. A slot is written, then
 * fenced before the row's count is taken; the segment that counts last folds the row's slots
 * (read past the cache: volatile) in slot order, as a separate pass over them would, and
 * sets the count back for the next step. */
#if HAS_SLOTS
#define FINISH_SEGMENT(s, r, acc, active)                                    \
    {                                                                        \
        const int slot_ = seg_slot[s];                                       \
        if (slot_ >= 0) {                                                    \
            seg_acc[slot_] = (active) ? (acc) : IDENTITY;                    \
            DEVICE_FENCE();                                                  \
            const int j_ = slot_row[slot_];                                  \
            const int a_ = slot_ptr[j_], b_ = slot_ptr[j_ + 1];              \
            if (atomic_inc(&slot_done[j_]) == b_ - a_ - 1) {                 \
                DEVICE_FENCE();                                              \
                slot_done[j_] = 0;                                           \
                if (ROW_ACTIVE(r)) {                                         \
                    volatile __global acc_t *va_ = seg_acc;                  \
                    acc_t f_ = IDENTITY;                                     \
                    for (int t_ = a_; t_ < b_; ++t_) f_ = REDUCE(f_, va_[t_]); \
                    EPILOGUE(r, f_)                                          \
                }                                                            \
            }                                                                \
        } else if (active) { EPILOGUE(r, acc) }                              \
    }
#else
#define FINISH_SEGMENT(s, r, acc, active)                                    \
    if (active) { EPILOGUE(r, acc) }
#endif

/* ------------------------------------------------------------ sub-group shuffles */
/* SG_SHFL=1: a team of at most SG_SIZE work-items (a warp: NVIDIA's compiler, where the
 * host builds for it) reduces in registers with PTX's shfl.sync.bfly (CUDA's
 * __shfl_xor_sync), and a work-group's sums cross its warps through local memory once: one
 * barrier, not one a halving of the tree. SG_SHFL=2: the same exchanges through local
 * memory, a barrier each (PoCL's tests of this code). 0: a tree in local memory. A value of
 * any 4- or 8-byte type moves as 32-bit words. Every work-item of the group reaches each
 * exchange (the team sizes are uniform over the group), and a barrier under a condition
 * (SG_BARRIER_IF) is one the whole group takes or skips. */
#ifndef SG_SHFL
#define SG_SHFL 0
#endif
#if SG_SHFL
#ifndef SG_SIZE
#define SG_SIZE 32
#endif
#if WG % SG_SIZE
#error "SG_SHFL needs WG a multiple of SG_SIZE"
#endif
#if SG_SHFL == 1
#define SG_LOCALS
#define SG_PARAMS
#define SG_ARGS
inline uint shfl_xor_u32(uint v, int m)
{
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(m));
    return r;
}
#define SHFL_XOR_U32(v, m) shfl_xor_u32(v, m)
#define SG_BARRIER_IF(c) if (c) barrier(CLK_LOCAL_MEM_FENCE);
#else
#define SG_LOCALS __local uint sg_words_[WG];
#define SG_PARAMS , __local uint *words_, const int lid_
#define SG_ARGS , sg_words_, lid
#define SHFL_XOR_U32(v, m) shfl_xor_local(words_, lid_, v, m)
/* PoCL's work-group loops mishandle a barrier under a condition, uniform as it is: here
 * every work-item meets the barrier (the same exchanges, one barrier more). */
#define SG_BARRIER_IF(c) barrier(CLK_LOCAL_MEM_FENCE);
inline uint shfl_xor_local(__local uint *words, const int lid, uint v, int m)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    words[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return words[lid ^ m];
}
#endif
#define SG_SHFL_OF(T)                                                        \
    inline T shfl_xor_##T(T v, int m SG_PARAMS)                              \
    {                                                                        \
        union { T v; uint w[sizeof(T) / 4]; } b_;                            \
        b_.v = v;                                                            \
        for (int i_ = 0; i_ < (int)(sizeof(T) / 4); ++i_)                    \
            b_.w[i_] = SHFL_XOR_U32(b_.w[i_], m);                            \
        return b_.v;                                                         \
    }
SG_SHFL_OF(acc_t)
SG_SHFL_OF(part_t)
#else
#define SG_LOCALS
#endif

/* Work-group sum of (p0, p1) into partials[2*(part_offset + group) + {0,1}]. */
#if NEED_PARTIALS && SG_SHFL
#define PARTIAL_LOCALS __local part_t lp0[WG / SG_SIZE]; __local part_t lp1[WG / SG_SIZE];
/* The pair (q0, q1) summed over the work-group where cond holds (uniform over the group):
 * shuffles within each sub-group, then each sub-group's pair through lp0 / lp1 behind one
 * barrier (SG_BARRIER_IF); work-item 0 ends with the sums. */
#define SG_PAIR_SUM(q0, q1, cond)                                            \
    {                                                                        \
        for (int m_ = SG_SIZE / 2; m_ > 0; m_ >>= 1) {                       \
            q0 += shfl_xor_part_t(q0, m_ SG_ARGS);                           \
            q1 += shfl_xor_part_t(q1, m_ SG_ARGS);                           \
        }                                                                    \
        if ((cond) && (lid & (SG_SIZE - 1)) == 0) {                          \
            lp0[lid / SG_SIZE] = q0;                                         \
            lp1[lid / SG_SIZE] = q1;                                         \
        }                                                                    \
        SG_BARRIER_IF(cond)                                                  \
        if ((cond) && lid == 0)                                              \
            for (int w_ = 1; w_ < WG / SG_SIZE; ++w_) {                      \
                q0 += lp0[w_];                                               \
                q1 += lp1[w_];                                               \
            }                                                                \
    }
#define WG_PARTIALS(p0, p1)                                                  \
    {                                                                        \
        part_t q0_ = (p0), q1_ = (p1);                                       \
        SG_PAIR_SUM(q0_, q1_, 1)                                             \
        if (lid == 0) {                                                      \
            const int g_ = 2 * (part_offset + (int)get_group_id(0));         \
            partials[g_] = q0_;                                              \
            partials[g_ + 1] = q1_;                                          \
        }                                                                    \
    }
#elif NEED_PARTIALS
#define PARTIAL_LOCALS __local part_t lp0[WG]; __local part_t lp1[WG];
#define WG_PARTIALS(p0, p1)                                                  \
    {                                                                        \
        lp0[lid] = (p0);                                                     \
        lp1[lid] = (p1);                                                     \
        for (int s_ = WG / 2; s_ > 0; s_ >>= 1) {                            \
            barrier(CLK_LOCAL_MEM_FENCE);                                    \
            if (lid < s_) {                                                  \
                lp0[lid] += lp0[lid + s_];                                   \
                lp1[lid] += lp1[lid + s_];                                   \
            }                                                                \
        }                                                                    \
        if (lid == 0) {                                                      \
            const int g_ = 2 * (part_offset + (int)get_group_id(0));         \
            partials[g_] = lp0[0];                                           \
            partials[g_ + 1] = lp1[0];                                       \
        }                                                                    \
    }
#else
#define PARTIAL_LOCALS
#define WG_PARTIALS(p0, p1)
#endif

/* FOLD_SUMS (the step's last launch, with the shuffles' partial sums): the step's sums
 * folded by its last work-group to finish, as reduce_partials would in a launch of its own:
 * each group counts itself after a device-wide fence (sums_done), and the group that counts
 * last reads the step's n_part partial pairs (past the cache: volatile), sums them, writes
 * sums_out[2 * sums_slot + {0, 1}], runs the app's FINISH and sets the count back. Every
 * group meets the same barriers (the others sum nothing): PoCL's work-group loops do not
 * take a barrier under a condition. Earlier launches of the step ran before this one (the
 * queue is in order). */
#if FOLD_SUMS && NEED_PARTIALS && SG_SHFL
#define FOLD_LOCALS __local int fold_last_;
#define FOLD_STEP_SUMS                                                       \
    {                                                                        \
        if (lid == 0) {                                                      \
            DEVICE_FENCE();                                                  \
            fold_last_ = atomic_inc(sums_done) == (int)get_num_groups(0) - 1; \
        }                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                        \
        const int last_ = fold_last_;                                        \
        if (last_) DEVICE_FENCE();                                           \
        volatile __global part_t *vp_ = partials;                            \
        part_t f0_ = 0, f1_ = 0;                                             \
        for (int i_ = lid; i_ < (last_ ? n_part : 0); i_ += WG) {            \
            f0_ += vp_[2 * i_];                                              \
            f1_ += vp_[2 * i_ + 1];                                          \
        }                                                                    \
        SG_PAIR_SUM(f0_, f1_, last_)                                         \
        if (last_ && lid == 0) {                                             \
            sums_out[2 * sums_slot] = f0_;                                   \
            sums_out[2 * sums_slot + 1] = f1_;                               \
            FINISH(sums_out + 2 * sums_slot)                                 \
            *sums_done = 0;                                                  \
        }                                                                    \
    }
#else
#define FOLD_LOCALS
#define FOLD_STEP_SUMS
#endif

#if STOP_FLAG
#define STOP_CHECK if (stop[0] != 0) return;
#else
#define STOP_CHECK
#endif

/* A team's reduction of acc (team a power of two dividing WG, uniform over the work-group):
 * afterwards the team's first work-item holds it in acc. SG_SHFL: shuffles within a
 * sub-group, then (teams wider than one) each sub-group's sum through lacc, one barrier.
 * Otherwise a tree in lacc. */
#if SG_SHFL
#define TEAM_SUM(acc, lacc, lid, team)                                       \
    {                                                                        \
        for (int m_ = min((team), SG_SIZE) / 2; m_ > 0; m_ >>= 1)            \
            acc = REDUCE(acc, shfl_xor_acc_t(acc, m_ SG_ARGS));              \
        if ((team) > SG_SIZE && ((lid) & (SG_SIZE - 1)) == 0)                \
            lacc[(lid) / SG_SIZE] = acc;                                     \
        SG_BARRIER_IF((team) > SG_SIZE)                                      \
        if ((team) > SG_SIZE && ((lid) & ((team) - 1)) == 0)                 \
            for (int w_ = 1; w_ < (team) / SG_SIZE; ++w_)                    \
                acc = REDUCE(acc, lacc[(lid) / SG_SIZE + w_]);               \
    }
#else
#define TEAM_SUM(acc, lacc, lid, team)                                       \
    {                                                                        \
        lacc[lid] = acc;                                                     \
        for (int s_ = (team) / 2; s_ > 0; s_ >>= 1) {                        \
            barrier(CLK_LOCAL_MEM_FENCE);                                    \
            if (((lid) & ((team) - 1)) < s_)                                 \
                lacc[lid] = REDUCE(lacc[lid], lacc[(lid) + s_]);             \
        }                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                        \
        acc = lacc[lid];                                                     \
    }
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void rowop(ROWOP_ARGS)
{
    STOP_CHECK
    PARTIAL_LOCALS
    SG_LOCALS
    FOLD_LOCALS
    const int lid = (int)get_local_id(0);
    part_t p0 = 0, p1 = 0;
#if MAPPING == 0
    /* ITEM: one work-item per segment */
    const int j = (int)get_global_id(0);
    if (j < nseg) {
        const int s = base + j;
        const int r = seg_row[s];
        const int p = COMPACT ? s : r;
        const int active = ROW_ACTIVE(r);
        acc_t acc = IDENTITY;
        if (active) SCAN(acc, seg_ptr[p], seg_ptr[p + 1], 1)
        FINISH_SEGMENT(s, r, acc, active)
    }
#elif MAPPING == 1 || MAPPING == 2
    /* TEAM / GROUP: TEAM work-items per segment, strided scan, tree reduction */
    __local acc_t lacc[WG];
    const int lane = lid & (TEAM - 1);
    const int j = (int)get_group_id(0) * (WG / TEAM) + lid / TEAM;
#if EARLY_EXIT
    __local volatile int lhit[WG / TEAM];  /* each team's least done position */
    if (lane == 0) lhit[lid / TEAM] = INT_MAX;
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    int s = 0, r = 0, active = 0;
    acc_t acc = IDENTITY;
    if (j < nseg) {
        s = base + j;
        r = seg_row[s];
        const int p = COMPACT ? s : r;
        active = ROW_ACTIVE(r);
#if EARLY_EXIT
        if (active) TEAM_SCAN(acc, seg_ptr[p], lane, seg_ptr[p + 1], TEAM, &lhit[lid / TEAM])
#else
        if (active) SCAN(acc, seg_ptr[p] + lane, seg_ptr[p + 1], TEAM)
#endif
    }
    TEAM_SUM(acc, lacc, lid, TEAM)
    if (lane == 0 && j < nseg) {
        FINISH_SEGMENT(s, r, acc, active)
    }
#elif MAPPING == 3
    /* STREAM (CSR-adaptive, after clSPARSE's csrmv_adaptive): a block of consecutive
     * segments whose entries fit local memory; the entries' terms are loaded with
     * coalesced reads, then a team of WG / nsegs work-items reduces each segment.
     * A block of one segment longer than BLOCK_NNZ is reduced by the whole group.
     * Blocks base .. base + nseg - 1; block b holds segments blk_ptr[b] .. blk_ptr[b+1].
     * QUEUE: persistent work-groups take blocks in order from a device-side queue (an
     * atomic counter), throttling-atc18 Algorithm 2 (CF-Q, SJ-Q). */
    __local acc_t lval[BLOCK_NNZ];
    __local acc_t lacc[WG];
#if QUEUE
    __local int qb_;
#define GRAB_BLOCK(b)                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    if (lid == 0) qb_ = atomic_inc(queue);                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    b = qb_ < nseg ? base + qb_ : -1;
    int b;
    GRAB_BLOCK(b)
    while (b >= 0) {  /* uniform over the group */
#else
    {
        const int b = base + (int)get_group_id(0);
#endif
        const int sa = blk_ptr[b], sb = blk_ptr[b + 1];  /* not s0, s1: those are vectors */
        const OFFSET_T k0 = seg_ptr[sa], k1 = seg_ptr[sb];
        const int nsegs = sb - sa;
        /* one segment too long for local memory: the group scans it in global memory */
        const int longseg = nsegs == 1 && k1 - k0 > BLOCK_NNZ;
        if (!longseg)
            for (OFFSET_T k = k0 + lid; k < k1; k += WG) lval[k - k0] = TERM(k);
        barrier(CLK_LOCAL_MEM_FENCE);
        int team = WG;  /* largest power of two with nsegs * team <= WG */
        while (team > 1 && team * nsegs > WG) team >>= 1;
        const int lane = lid & (team - 1);
        const int s = sa + lid / team;
        acc_t acc = IDENTITY;
        int r = 0, active = 0;
        if (s < sb) {
            r = seg_row[s];
            active = ROW_ACTIVE(r);
            if (longseg) {
                if (active) SCAN(acc, k0 + lane, k1, team)
            } else {
                const int e0 = (int)(seg_ptr[s] - k0), e1 = (int)(seg_ptr[s + 1] - k0);
#if COMPENSATED
                acc_t c_ = 0;
                for (int e = e0 + lane; e < e1; e += team) {
                    const acc_t y_ = lval[e] - c_;
                    const acc_t t_ = acc + y_;
                    c_ = (t_ - acc) - y_;
                    acc = t_;
                }
#else
                for (int e = e0 + lane; e < e1; e += team) acc = REDUCE(acc, lval[e]);
#endif
            }
        }
        TEAM_SUM(acc, lacc, lid, team)
        if (lane == 0 && s < sb) {
            FINISH_SEGMENT(s, r, acc, active)
        }
#if QUEUE
        GRAB_BLOCK(b)  /* its barriers also guard lval and lacc for the next block */
#endif
    }
#elif MAPPING == 5
    /* DYNAMIC (the dynamic baseline of FinePar TKDE Table 2, after Pandit and Govindarajan's
     * fluidic kernels): the rows are cut into nseg chunks (chunk c: rows blk_ptr[c] ..
     * blk_ptr[c+1] of the whole CSR); persistent work-groups of both devices take chunks
     * through one device-side counter: the GPU's from the front (low 16 bits), the CPU's
     * (DYN_BACK) from the back (high 16 bits), until the two ends meet. */
    __local int qc_;
#define GRAB_CHUNK(c)                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    if (lid == 0) {                                                              \
        const int t_ = atomic_add(queue, DYN_BACK ? 65536 : 1);                  \
        const int front_ = t_ & 0xFFFF, back_ = t_ >> 16;                        \
        qc_ = (front_ + back_ >= nseg) ? -1 : (DYN_BACK ? nseg - 1 - back_ : front_); \
    }                                                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                \
    c = qc_;
    int c;
    GRAB_CHUNK(c)
    while (c >= 0) {  /* uniform over the group: every work-item read the same c */
        for (int r = blk_ptr[c] + lid; r < blk_ptr[c + 1]; r += WG) {
            const int active = ROW_ACTIVE(r);
            acc_t acc = IDENTITY;
            if (active) SCAN(acc, seg_ptr[r], seg_ptr[r + 1], 1)
            if (active) { EPILOGUE(r, acc) }
        }
        GRAB_CHUNK(c)
    }
#elif MAPPING == 4
    /* ELL: row j of the share has entries at j, j + nseg, j + 2 nseg, ... (column-major,
     * -1 after its last entry); seg_ptr[1] holds the width. */
    const int j = (int)get_global_id(0);
    if (j < nseg) {
        const int r = seg_row[base + j];
        const int active = ROW_ACTIVE(r);
        acc_t acc = IDENTITY;
        if (active) {
            const int width = (int)seg_ptr[1];
            for (int t = 0; t < width; ++t) {
                const OFFSET_T k = (OFFSET_T)t * nseg + j;
                if (COL(k) < 0) break;  /* the same load as TERM's, merged */
                acc = REDUCE(acc, TERM(k));
                if (SCAN_DONE(acc)) break;
            }
        }
        FINISH_SEGMENT(base + j, r, acc, active)
    }
#else
#error "unknown MAPPING"
#endif
    WG_PARTIALS(p0, p1)
    FOLD_STEP_SUMS
}

/* A first pass over many partials (a step of many work-groups): group g sums its slice of
 * the n pairs into tmp[2g], tmp[2g+1], so the last pass reads one pair per group. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce_stage(const int n, __global const part_t *restrict partials,
                  __global part_t *restrict tmp)
{
    __local part_t lp0[WG];
    __local part_t lp1[WG];
    const int lid = (int)get_local_id(0), g = (int)get_group_id(0);
    const int per = (n + (int)get_num_groups(0) - 1) / (int)get_num_groups(0);
    const int i1 = min(n, (g + 1) * per);
    part_t p0 = 0, p1 = 0;
    for (int i = g * per + lid; i < i1; i += WG) {
        p0 += partials[2 * i];
        p1 += partials[2 * i + 1];
    }
    lp0[lid] = p0;
    lp1[lid] = p1;
    for (int s = WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            lp0[lid] += lp0[lid + s];
            lp1[lid] += lp1[lid + s];
        }
    }
    if (lid == 0) {
        tmp[2 * g] = lp0[0];
        tmp[2 * g + 1] = lp1[0];
    }
}

/* Last stage of the step's sums: n pairs of partials into out[2*slot], out[2*slot+1]
 * (one work-group), then the app's FINISH (device-side work with the two sums, e.g.
 * PageRank's next base term and its convergence flag). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduce_partials(const int n, __global const part_t *restrict partials,
                     __global part_t *restrict out, const int slot,
                     __global float *restrict fscal, __global int *restrict stop)
{
    __local part_t lp0[WG];
    __local part_t lp1[WG];
    const int lid = (int)get_local_id(0);
    part_t p0 = 0, p1 = 0;
    for (int i = lid; i < n; i += WG) {
        p0 += partials[2 * i];
        p1 += partials[2 * i + 1];
    }
    lp0[lid] = p0;
    lp1[lid] = p1;
    for (int s = WG / 2; s > 0; s >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid < s) {
            lp0[lid] += lp0[lid + s];
            lp1[lid] += lp1[lid + s];
        }
    }
    if (lid == 0) {
        out[2 * slot] = lp0[0];
        out[2 * slot + 1] = lp1[0];
        FINISH(out + 2 * slot)
    }
}
