// TMA and mbarrier fixtures for phobos-sim, compiled by NVIDIA's nvrtc
// (scripts/nvrtc-fixtures.py tma) for sm_90a; the PTX is checked in beside
// this file and run by crates/phobos-sim/tests/nvrtc_tma.rs.
//
// The copies, barriers and fences are inline PTX as the PTX ISA 8.x writes
// them; everything else (which element a thread reads, the swizzle it
// undoes, the ring's stage and parity arithmetic) is plain CUDA C compiled
// by nvrtc, independently of the simulator, so a swizzle or parity bug in
// the simulator cannot hide by being made the same way twice.
//
// No CUDA headers: CUtensorMap is the driver's 128-byte, 64-byte-aligned
// opaque type.

struct alignas(64) CUtensorMap { unsigned long long opaque[16]; };

__device__ __forceinline__ unsigned smem(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void bar_init(unsigned long long* b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(b)), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_arrive(unsigned long long* b) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" :: "r"(smem(b)) : "memory");
}

__device__ __forceinline__ void bar_expect(unsigned long long* b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;"
                 :: "r"(smem(b)), "r"(bytes) : "memory");
}

// Spins on try_wait.parity until the phase with parity `parity` completed.
__device__ __forceinline__ void bar_wait(unsigned long long* b, unsigned parity) {
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n"
            ".reg .pred p;\n"
            "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n"
            "}\n"
            : "=r"(done) : "r"(smem(b)), "r"(parity) : "memory");
    }
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int x, int y,
                                            unsigned long long* b) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];"
        :: "r"(smem(dst)), "l"(map), "r"(x), "r"(y), "r"(smem(b)) : "memory");
}

// The byte offset where a swizzle of `bits` (0: none, 1: 32B, 2: 64B,
// 3: 128B) puts unswizzled offset `o` of a 1024-byte-aligned tile: the
// 16-byte chunk index XOR the 128-byte row, over `bits` bits (PTX ISA,
// "Tensor swizzling modes").
__device__ __forceinline__ unsigned swz(unsigned o, unsigned bits) {
    unsigned mask = (1u << bits) - 1;
    return o ^ (((o >> 7) & mask) << 4);
}

// One box of f32 at (x, y): box_x by box_y elements, `bits` of swizzle.
// Every thread writes the elements it owns to out in logical order.
extern "C" __global__ void tma_tile_2d(const __grid_constant__ CUtensorMap map, float* out,
                                       int x, int y, int box_x, int box_y, unsigned bits) {
    __shared__ alignas(1024) float tile[4096];
    __shared__ alignas(8) unsigned long long full;
    unsigned bytes = box_x * box_y * 4;
    if (threadIdx.x == 0) {
        bar_init(&full, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        bar_expect(&full, bytes);
        tma_load_2d(tile, &map, x, y, &full);
    }
    bar_wait(&full, 0);
    const char* base = reinterpret_cast<const char*>(tile);
    for (int e = threadIdx.x; e < box_x * box_y; e += blockDim.x) {
        out[e] = *reinterpret_cast<const float*>(base + swz(4 * e, bits));
    }
}

// A 3-stage ring over the tiles of a rows-by-n f32 tensor, box 32 x 8,
// 128B swizzle: thread 0 produces (waits on the stage's `empty` barrier,
// then expect_tx and the copy), every thread consumes (waits on `full`,
// copies the tile out in logical order, arrives on `empty`). Stage and
// parity are k % 3 and (k / 3) & 1 on both barriers.
extern "C" __global__ void tma_ring(const __grid_constant__ CUtensorMap map, float* out, int tiles) {
    constexpr int S = 3, BX = 32, BY = 8, BYTES = BX * BY * 4;
    __shared__ alignas(1024) float stage[S][BX * BY];
    __shared__ alignas(8) unsigned long long full[S], empty[S];
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], blockDim.x);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 0; k < S && k < tiles; ++k) {
            bar_expect(&full[k], BYTES);
            tma_load_2d(stage[k], &map, k * BX, 0, &full[k]);
        }
    }
    for (int k = 0; k < tiles; ++k) {
        int s = k % S;
        unsigned parity = (k / S) & 1;
        bar_wait(&full[s], parity);
        const char* base = reinterpret_cast<const char*>(stage[s]);
        for (int e = threadIdx.x; e < BX * BY; e += blockDim.x) {
            out[k * BX * BY + e] = *reinterpret_cast<const float*>(base + swz(4 * e, 3));
        }
        bar_arrive(&empty[s]);
        if (threadIdx.x == 0 && k + S < tiles) {
            bar_wait(&empty[s], parity);
            bar_expect(&full[s], BYTES);
            tma_load_2d(stage[s], &map, (k + S) * BX, 0, &full[s]);
        }
    }
}

// The ring warp-specialized, as Hopper GEMMs arrange it: warp 0 is the
// producer (lane 0 issues every copy, waiting on `empty` with the
// producer's parity, which starts at 1 so the first pass through the
// stages does not wait), the other warps consume and release a stage by
// arriving on its `empty` barrier; no __syncthreads after the start.
extern "C" __global__ void tma_ring_ws(const __grid_constant__ CUtensorMap map, float* out, int tiles) {
    constexpr int S = 3, BX = 32, BY = 8, BYTES = BX * BY * 4;
    __shared__ alignas(1024) float stage[S][BX * BY];
    __shared__ alignas(8) unsigned long long full[S], empty[S];
    const int consumers = blockDim.x - 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; ++s) {
            bar_init(&full[s], 1);
            bar_init(&empty[s], consumers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x < 32) {
        if (threadIdx.x == 0) {
            for (int k = 0; k < tiles; ++k) {
                int s = k % S;
                bar_wait(&empty[s], ((k / S) & 1) ^ 1);
                bar_expect(&full[s], BYTES);
                tma_load_2d(stage[s], &map, k * BX, 0, &full[s]);
            }
        }
        return;
    }
    const int c = threadIdx.x - 32;
    for (int k = 0; k < tiles; ++k) {
        int s = k % S;
        bar_wait(&full[s], (k / S) & 1);
        const char* base = reinterpret_cast<const char*>(stage[s]);
        for (int e = c; e < BX * BY; e += consumers) {
            out[k * BX * BY + e] = *reinterpret_cast<const float*>(base + swz(4 * e, 3));
        }
        bar_arrive(&empty[s]);
    }
}
