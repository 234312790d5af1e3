// Hand-written reference GEMM for issue 30: C = A * B, bf16 operands (A
// row-major [M, K], B row-major [K, N]), f32 accumulation and f32 C
// row-major [M, N], the tile of the GPU bundle's bf16_gemm.pho: 128 x 128 of
// C per CTA of 8 warps, K in steps of 32 through a 3-stage cp.async ring.
//
// Written in the CUTLASS sm_80 "multistage" style (cp.async.cg 16-byte
// copies into XOR-swizzled shared memory, ldmatrix / ldmatrix.trans into
// mma.sync.m16n8k16 fragments, one barrier per K step), with no CUDA
// headers so nvrtc alone compiles it. It is the reference row of
// scripts/sass-loop-report.py (what hand CUDA C costs per HMMA) and runs in
// phobos-sim (crates/phobos-sim/tests/nvrtc_gemm.rs).
//
// Shapes: M and N multiples of 128, K a multiple of 32 (no ragged edges:
// the point is the interior loop). Launch: grid (N / 128, M / 128),
// 256 threads, no dynamic shared memory (3 stages x 16 KB = 48 KB static).
//
// Regenerate the PTX beside this file with scripts/nvrtc-fixtures.py gemm.

typedef unsigned int u32;
typedef unsigned short u16;

#define STAGES 3
#define TILE_M 128
#define TILE_N 128
#define TILE_K 32
// Bytes of one stage: the A tile (128 x 32 bf16) then the B tile (32 x 128).
#define A_BYTES (TILE_M * TILE_K * 2)
#define B_BYTES (TILE_K * TILE_N * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)

__device__ __forceinline__ u32 smem_addr(const void *p) {
    u32 r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

// A tile swizzle: a row is 64 bytes (four 16-byte chunks), so two rows
// share one 128-byte line of eight chunks; the chunk within the line is
// XORed with the line number (mod 8). The 8 rows one ldmatrix phase reads
// at one logical chunk then land in 8 distinct chunks: no bank conflicts.
__device__ __forceinline__ u32 a_offset(int row, int chunk) {
    int line = row >> 1;
    return (u32)(line * 128 + ((((row & 1) << 2) | chunk) ^ (line & 7)) * 16);
}

// B tile swizzle: a row (one k) is 256 bytes, sixteen chunks; the chunk's
// low three bits are XORed with k mod 8, so ldmatrix.trans's 8 k-rows at one
// logical chunk hit 8 distinct chunks.
__device__ __forceinline__ u32 b_offset(int k, int chunk) {
    return (u32)(k * 256 + (chunk ^ (k & 7)) * 16);
}

__device__ __forceinline__ void cp_async16(u32 dst, const void *src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void ldsm_x4(u32 addr, u32 *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldsm_x4_trans(u32 addr, u32 *r) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma_bf16(float *d, const u32 *a, const u32 *b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(256, 2)
gemm_bf16_128x128x32(const u16 *__restrict__ A, const u16 *__restrict__ B, float *__restrict__ C,
                     int M, int K, int N) {
    __shared__ __align__(128) unsigned char smem[STAGES * STAGE_BYTES];
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    // 2 x 4 warps, each owning 64 rows x 32 columns of the CTA's tile.
    const int warp_m = (warp >> 2) * 64;
    const int warp_n = (warp & 3) * 32;
    const int m0 = blockIdx.y * TILE_M;
    const int n0 = blockIdx.x * TILE_N;
    const u32 base = smem_addr(smem);

    // Each thread copies two 16-byte chunks of A and two of B per stage.
    // Chunk i of A is row i / 4, chunk i % 4; chunk i of B is k row i / 16,
    // chunk i % 16. Global pointers advance by a constant per K step; the
    // shared offsets within a stage never change.
    const u16 *ga[2];
    const u16 *gb[2];
    u32 sa[2], sb[2];
#pragma unroll
    for (int j = 0; j < 2; j++) {
        int i = tid + j * 256;
        int ar = i >> 2, ac = i & 3;
        ga[j] = A + (size_t)(m0 + ar) * K + ac * 8;
        sa[j] = a_offset(ar, ac);
        int br = i >> 4, bc = i & 15;
        gb[j] = B + (size_t)br * N + n0 + bc * 8;
        sb[j] = A_BYTES + b_offset(br, bc);
    }
    const size_t b_step = (size_t)TILE_K * N;

    // ldmatrix row addresses of this lane: for A (x4) rows lane % 16 of a
    // 16-row block at chunk 2 kk + lane / 16; for B (x4.trans) k rows
    // lane % 16 of a 16-deep step at chunk 2 nj + lane / 16 of the warp's
    // 32 columns.
    u32 la[2], lb[2];
#pragma unroll
    for (int kk = 0; kk < 2; kk++)
        la[kk] = a_offset(warp_m + (lane & 15), kk * 2 + (lane >> 4));
#pragma unroll
    for (int nj = 0; nj < 2; nj++)
        lb[nj] = A_BYTES + b_offset(lane & 15, (warp_n >> 3) + nj * 2 + (lane >> 4));

    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int r = 0; r < 4; r++) acc[i][j][r] = 0.f;

    const int ktiles = K / TILE_K;

    // Prologue: the first STAGES - 1 tiles in flight, one commit group each.
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles) {
            u32 st = base + s * STAGE_BYTES;
#pragma unroll
            for (int j = 0; j < 2; j++) {
                cp_async16(st + sa[j], ga[j]);
                cp_async16(st + sb[j], gb[j]);
                ga[j] += TILE_K;
                gb[j] += b_step;
            }
        }
        asm volatile("cp.async.commit_group;");
    }

    int read_stage = 0;
    int write_stage = STAGES - 1;
    for (int kt = 0; kt < ktiles; kt++) {
        // Tile kt has landed once at most STAGES - 2 younger groups remain;
        // the barrier also tells every thread that the stage written next
        // (read in trip kt - 1) is no longer being read.
        asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
        __syncthreads();

        if (kt + STAGES - 1 < ktiles) {
            u32 st = base + write_stage * STAGE_BYTES;
#pragma unroll
            for (int j = 0; j < 2; j++) {
                cp_async16(st + sa[j], ga[j]);
                cp_async16(st + sb[j], gb[j]);
                ga[j] += TILE_K;
                gb[j] += b_step;
            }
        }
        // Always commit, so the group count (and wait_group's meaning)
        // stays the same on the last trips.
        asm volatile("cp.async.commit_group;");

        const u32 st = base + read_stage * STAGE_BYTES;
#pragma unroll
        for (int kk = 0; kk < 2; kk++) {
            u32 a[4][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
                // 16 rows further down is 8 lines of 128 bytes, the same swizzle.
                ldsm_x4(st + la[kk] + mi * 16 * 64, a[mi]);
#pragma unroll
            for (int nj = 0; nj < 2; nj++) {
                u32 t[4];
                // 16 k rows further is 16 x 256 bytes, the same swizzle.
                ldsm_x4_trans(st + lb[nj] + kk * 16 * 256, t);
                b[2 * nj][0] = t[0];
                b[2 * nj][1] = t[1];
                b[2 * nj + 1][0] = t[2];
                b[2 * nj + 1][1] = t[3];
            }
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++) mma_bf16(acc[mi][ni], a[mi], b[ni]);
        }
        read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
        write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
    }
    asm volatile("cp.async.wait_group 0;");

    // Epilogue: c0, c1 at row g, columns 2t and 2t + 1 of each 16 x 8 tile;
    // c2, c3 eight rows below.
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            int row = m0 + warp_m + mi * 16 + g;
            int col = n0 + warp_n + ni * 8 + 2 * t;
            float2 *p = (float2 *)(C + (size_t)row * N + col);
            p[0] = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
            float2 *q = (float2 *)(C + (size_t)(row + 8) * N + col);
            q[0] = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
        }
}
