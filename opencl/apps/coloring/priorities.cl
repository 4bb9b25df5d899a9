/* Jones-Plassmann priorities on the device: prio[v] = mix32(v + key), with mix32 the
 * finaliser of MurmurHash3 (xor-shifts and odd multipliers, a bijection of 32-bit words), so
 * the priorities of distinct vertices are distinct; `key` comes from the seed. */
uint mix32(uint h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

__kernel void priorities(const int n, const uint key, __global uint *restrict prio)
{
    const int v = (int)get_global_id(0);
    if (v < n) prio[v] = mix32((uint)v + key);
}
