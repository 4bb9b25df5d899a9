/*
 * SSSP's walk on one CPU work-item: Dijkstra with a binary min-heap (finepar/engine/heapwalk.py).
 *
 * The CPU's share of a frontier app's small frontiers (opencl/skeleton/walk.cl walks BFS's
 * levels): a level-synchronous device pays a launch or a barrier a level, which a road
 * network's thousands of narrow relaxation waves never amortise; one work-item popping the
 * nearest vertex pays a few nanoseconds an edge and relaxes each vertex once.
 *
 * Each relaxation is the device fragment's (apps/sssp/frontier.cl): nd = dist[u] + w in
 * float32, w = data[k] or fabs(data[k]); v improves when nd < dist[v]. float32 addition of a
 * non-negative length never decreases a sum, so a popped vertex's distance is final and the
 * walk, run to the end, leaves the one float32 fixed point the devices reach.
 *
 * The heap is indexed (heap_v[i] the vertex at slot i, heap_d[i] its distance, pos[v] its
 * slot): an improved vertex in the heap moves up (decrease-key), so the heap holds each
 * unsettled improved vertex once, and it *is* the frontier a hand-over gives the push side.
 * pos[v]: -1 never in the heap this walk, -2 popped; reset to -1 (of every touched vertex)
 * before the kernel returns, so the buffer is all -1 between walks.
 *
 * touched[0 .. nfront) is the frontier to start from (distinct vertices, their dist set);
 * each vertex the walk improves for the first time is appended: the entries a hand-over
 * moves. The walk stops when the heap is empty (`EMPTY`) or when the heap's vertices have
 * more than `max_edges` out-edges (`GREW`: a device relaxing them in parallel does it
 * faster).
 *
 * Results (one read on the host): out[0] why it stopped, out[1] the heap's vertices,
 * out[2] their out-edges, out[3] touched vertices, out[4] vertices popped, out[5] edges
 * relaxed; when it grew, heap_d[0] is the least distance left.
 */
#ifndef OFFSET_T
#define OFFSET_T int
#endif
#define WALK_EMPTY 0
#define WALK_GREW 1

/* The arguments every walk kernel takes first. */
#define WALK_ARGS const long max_edges, const int nfront,                             \
                  __global const OFFSET_T *restrict indptr,                           \
                  __global const int *restrict indices,                               \
                  __global const float *restrict data, const int abs_weights,         \
                  __global float *restrict dist, __global float *restrict heap_d,      \
                  __global int *restrict heap_v, __global int *restrict pos,           \
                  __global int *restrict touched, __global long *restrict out

/* Vertex u (its edges end at `last`) leaves the queue: the counts of a walk. */
#define SETTLED(u, last) {                                                            \
        live -= (long)((last) - indptr[u]);                                           \
        ++popped;                                                                     \
        relaxed += (long)((last) - indptr[u]);                                        \
    }

/* Every touched vertex's pos back to -1, and the walk's results (see the top). */
void walk_done(__global long *out, __global int *pos, __global const int *touched,
               const int ntouched, const int stop, const int queued, const long live,
               const long popped, const long relaxed)
{
    for (int i = 0; i < ntouched; ++i) pos[touched[i]] = -1;
    out[0] = stop;
    out[1] = queued;
    out[2] = live;
    out[3] = ntouched;
    out[4] = popped;
    out[5] = relaxed;
}

/* Move slot i's entry (d, v) up while its parent is farther. */
void heap_up(__global float *hd, __global int *hv, __global int *pos, int i, const float d,
             const int v)
{
    while (i > 0) {
        const int p = (i - 1) >> 1;
        if (!(d < hd[p])) break;
        hd[i] = hd[p];
        hv[i] = hv[p];
        pos[hv[i]] = i;
        i = p;
    }
    hd[i] = d;
    hv[i] = v;
    pos[v] = i;
}

/* Put (d, v) at slot 0 of a heap of `size` slots and move it down. */
void heap_down(__global float *hd, __global int *hv, __global int *pos, const int size,
               const float d, const int v)
{
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= size) break;
        if (c + 1 < size && hd[c + 1] < hd[c]) ++c;
        if (!(hd[c] < d)) break;
        hd[i] = hd[c];
        hv[i] = hv[c];
        pos[hv[i]] = i;
        i = c;
    }
    hd[i] = d;
    hv[i] = v;
    pos[v] = i;
}

__kernel void dijkstra_walk(WALK_ARGS)
{
    int size = 0, ntouched = nfront, stop = WALK_EMPTY;
    long live = 0, popped = 0, relaxed = 0;
    for (int i = 0; i < nfront; ++i) {
        const int v = touched[i];
        if (pos[v] != -1) continue;
        heap_up(heap_d, heap_v, pos, size++, dist[v], v);
        live += (long)(indptr[v + 1] - indptr[v]);
    }
    while (size > 0) {
        if (live > max_edges) { stop = WALK_GREW; break; }
        const int u = heap_v[0];
        const float du = heap_d[0];
        pos[u] = -2;
        if (--size > 0) heap_down(heap_d, heap_v, pos, size, heap_d[size], heap_v[size]);
        const OFFSET_T last = indptr[u + 1];
        SETTLED(u, last)
        for (OFFSET_T k = indptr[u]; k < last; ++k) {
            const int v = indices[k];
            const float w = abs_weights ? fabs(data[k]) : data[k];
            const float nd = du + w;
            if (!(nd < dist[v])) continue;
            dist[v] = nd;
            const int p = pos[v];
            if (p >= 0) {
                heap_up(heap_d, heap_v, pos, p, nd, v);
            } else {
                if (p == -1) touched[ntouched++] = v;
                heap_up(heap_d, heap_v, pos, size++, nd, v);
                live += (long)(indptr[v + 1] - indptr[v]);
            }
        }
    }
    walk_done(out, pos, touched, ntouched, stop, size, live, popped, relaxed);
}

/*
 * The same walk with a bucket queue where the edge lengths allow one (Dial, CACM 1969;
 * Dinitz's rule): buckets of width delta = the least edge length, so every vertex in the
 * lowest non-empty bucket is settled whichever order they leave it in (relaxing one gives
 * at least its distance + delta: the next bucket or later). Live distances span less than
 * the longest edge plus delta, so `nb` = longest / least + 2 buckets, used cyclically, hold
 * them all. A bucket is a doubly linked list over the vertices (nxt, prv), so an improved
 * vertex moves between buckets in O(1): each edge costs O(1), not a heap's O(log n), and a
 * road network of unit lengths walks as a BFS does. A float32 sum that rounds a vertex into
 * an already settled bucket is clamped to the current one; a settled vertex that improves
 * again (a rounding) is put back, so the walk ends, as the heap's does, at the one float32
 * fixed point. pos[v] is v's bucket slot while queued (-1 never queued this walk, -2
 * settled); head[] is all -1 between walks. Results as dijkstra_walk's; on GREW the queued
 * vertices are written to heap_v[0 ..) and the least distance among them to heap_d[0].
 */
void bucket_insert(__global int *head, __global int *nxt, __global int *prv,
                   __global int *pos, const int v, const int s)
{
    const int h = head[s];
    nxt[v] = h;
    prv[v] = -1;
    if (h >= 0) prv[h] = v;
    head[s] = v;
    pos[v] = s;
}

void bucket_remove(__global int *head, __global int *nxt, __global int *prv, const int v,
                   const int s)
{
    const int a = prv[v], b = nxt[v];
    if (a >= 0) nxt[a] = b; else head[s] = b;
    if (b >= 0) prv[b] = a;
}

__kernel void dial_walk(WALK_ARGS,
                        const float inv_delta, const int nb, __global int *restrict head,
                        __global int *restrict nxt, __global int *restrict prv)
{
    int size = 0, ntouched = nfront, stop = WALK_EMPTY;
    long live = 0, popped = 0, relaxed = 0, cur = LONG_MAX;
    for (int i = 0; i < nfront; ++i) {
        const int v = touched[i];
        if (pos[v] != -1) continue;
        const long b = (long)(dist[v] * inv_delta);
        bucket_insert(head, nxt, prv, pos, v, (int)(b % nb));
        cur = min(cur, b);
        ++size;
        live += (long)(indptr[v + 1] - indptr[v]);
    }
    int cs = size ? (int)(cur % nb) : 0;  /* cur's slot, kept without a division */
    while (size > 0) {
        if (live > max_edges) { stop = WALK_GREW; break; }
        const int s = cs;
        const int u = head[s];
        if (u < 0) {
            ++cur;
            if (++cs == nb) cs = 0;
            continue;
        }
        bucket_remove(head, nxt, prv, u, s);
        pos[u] = -2;
        --size;
        const float du = dist[u];
        const OFFSET_T last = indptr[u + 1];
        SETTLED(u, last)
        for (OFFSET_T k = indptr[u]; k < last; ++k) {
            const int v = indices[k];
            const float w = abs_weights ? fabs(data[k]) : data[k];
            const float nd = du + w;
            if (!(nd < dist[v])) continue;
            dist[v] = nd;
            int ns = cs + (int)(max((long)(nd * inv_delta), cur) - cur);  /* < cs + nb */
            if (ns >= nb) ns -= nb;
            const int p = pos[v];
            if (p >= 0) {
                if (p != ns) {
                    bucket_remove(head, nxt, prv, v, p);
                    bucket_insert(head, nxt, prv, pos, v, ns);
                }
            } else {
                if (p == -1) touched[ntouched++] = v;
                bucket_insert(head, nxt, prv, pos, v, ns);
                ++size;
                live += (long)(indptr[v + 1] - indptr[v]);
            }
        }
    }
    if (stop == WALK_GREW) {  /* the queued vertices, nearest bucket first */
        int k = 0;
        for (int c = 0; k < size && c < nb; ++c)
            for (int v = head[(cs + c) % nb]; v >= 0; v = nxt[v]) heap_v[k++] = v;
        float least = INFINITY;
        for (int i = 0; i < k; ++i) least = fmin(least, dist[heap_v[i]]);
        heap_d[0] = least;
    }
    for (int s = 0; s < nb; ++s) head[s] = -1;
    walk_done(out, pos, touched, ntouched, stop, size, live, popped, relaxed);
}

/*
 * The walk where every edge has one length w: a FIFO queue (touched[] itself, from its
 * start) settles each vertex at its first improvement. Paths of k edges all sum to the same
 * float32 S_k = S_(k-1) + w, which grows with k, so the breadth-first order reaches each
 * vertex first along its fewest edges, at its least sum: a road network of unit lengths
 * costs what BFS's walk costs. Results as dijkstra_walk's (out[1] the vertices queued, on
 * GREW copied to heap_v[0 ..), the first's distance, the least, to heap_d[0]).
 */
__kernel void fifo_walk(WALK_ARGS,
                        const float w)
{
    int h = 0, ntouched = nfront, stop = WALK_EMPTY;
    long live = 0, popped = 0, relaxed = 0;
    for (int i = 0; i < nfront; ++i) {
        pos[touched[i]] = 0;
        live += (long)(indptr[touched[i] + 1] - indptr[touched[i]]);
    }
    while (h < ntouched) {
        if (live > max_edges) { stop = WALK_GREW; break; }
        const int u = touched[h++];
        const float du = dist[u];
        const OFFSET_T last = indptr[u + 1];
        SETTLED(u, last)
        for (OFFSET_T k = indptr[u]; k < last; ++k) {
            const int v = indices[k];
            const float nd = du + w;
            if (!(nd < dist[v])) continue;
            dist[v] = nd;
            if (pos[v] == -1) {
                pos[v] = 0;
                touched[ntouched++] = v;
                live += (long)(indptr[v + 1] - indptr[v]);
            }
        }
    }
    if (stop == WALK_GREW) {
        for (int i = h; i < ntouched; ++i) heap_v[i - h] = touched[i];
        heap_d[0] = dist[touched[h]];
    }
    walk_done(out, pos, touched, ntouched, stop, ntouched - h, live, popped, relaxed);
}
