// CUDA C fixtures for phobos-sim's tensor-core and async-copy instructions.
//
// Compiled to PTX by NVIDIA's nvrtc (scripts/nvrtc-fixtures.py), never by
// Phobos, so the simulator's fragment layouts are checked against code
// whose PTX NVIDIA's compiler produced: the element placement below follows
// the PTX ISA's "Matrix Fragments for mma.m16n8kK" tables, and the async
// copies use NVIDIA's own pipeline primitives (cuda_pipeline_primitives.h).
//
// Every kernel runs as one warp (32 threads) and computes
// D[16][8] = A[16][K] * B[K][8] + C[16][8], all matrices row-major in
// global memory. Element types: see each kernel.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_pipeline_primitives.h>

typedef unsigned int u32;
typedef unsigned short u16;

__device__ u32 pack16(u16 lo, u16 hi) { return (u32)lo | ((u32)hi << 16); }
__device__ u32 pack8(const signed char *p) {
    return (u32)(unsigned char)p[0] | ((u32)(unsigned char)p[1] << 8) |
           ((u32)(unsigned char)p[2] << 16) | ((u32)(unsigned char)p[3] << 24);
}

// A fragment of m16n8k16 f16/bf16 (A is [16][16]): a_r at row
// g + 8 (r % 2), columns (r / 2) * 8 + 2t and the next.
__device__ void frag_a16(const u16 *A, int g, int t, u32 *a) {
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r % 2), col = (r / 2) * 8 + 2 * t;
        a[r] = pack16(A[row * 16 + col], A[row * 16 + col + 1]);
    }
}

// B fragment of m16n8k16 f16/bf16 (B is [16][8]): b_r at rows 8r + 2t and
// the next, column g.
__device__ void frag_b16(const u16 *B, int g, int t, u32 *b) {
    for (int r = 0; r < 2; r++) {
        int row = r * 8 + 2 * t;
        b[r] = pack16(B[row * 8 + g], B[(row + 1) * 8 + g]);
    }
}

// C/D fragment of f16 accumulators, two .f16x2 registers: c_r holds row
// g + 8r, columns 2t (low half) and 2t + 1 (high half).
__device__ void frag_c_f16(const u16 *C, int g, int t, u32 *c) {
    for (int r = 0; r < 2; r++) {
        int row = g + 8 * r;
        c[r] = pack16(C[row * 8 + 2 * t], C[row * 8 + 2 * t + 1]);
    }
}

__device__ void store_d_f16(u16 *D, int g, int t, const u32 *d) {
    for (int r = 0; r < 2; r++) {
        int row = g + 8 * r;
        D[row * 8 + 2 * t] = (u16)(d[r] & 0xffff);
        D[row * 8 + 2 * t + 1] = (u16)(d[r] >> 16);
    }
}

// C/D fragment of f32/s32 accumulators: c_r at row g + 8 * (r / 2), col 2t + r % 2.
#define C_ROW(r) (g + 8 * ((r) / 2))
#define C_COL(r) (2 * t + (r) % 2)

// f16 x f16 -> f32, m16n8k16; fragments built element by element.
extern "C" __global__ void mma_f16_k16(const u16 *A, const u16 *B, const float *C, float *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    u32 a[4], b[2];
    frag_a16(A, g, t, a);
    frag_b16(B, g, t, b);
    float c[4], d[4];
    for (int r = 0; r < 4; r++) c[r] = C[C_ROW(r) * 8 + C_COL(r)];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int r = 0; r < 4; r++) D[C_ROW(r) * 8 + C_COL(r)] = d[r];
}

// bf16 x bf16 -> f32, m16n8k16.
extern "C" __global__ void mma_bf16_k16(const u16 *A, const u16 *B, const float *C, float *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    u32 a[4], b[2];
    frag_a16(A, g, t, a);
    frag_b16(B, g, t, b);
    float c[4], d[4];
    for (int r = 0; r < 4; r++) c[r] = C[C_ROW(r) * 8 + C_COL(r)];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int r = 0; r < 4; r++) D[C_ROW(r) * 8 + C_COL(r)] = d[r];
}

// tf32 x tf32 -> f32, m16n8k8; operands rounded with cvt.rna.tf32.f32.
extern "C" __global__ void mma_tf32_k8(const float *A, const float *B, const float *C, float *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    u32 a[4], b[2];
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r % 2), col = (r / 2) * 4 + t;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[r]) : "f"(A[row * 8 + col]));
    }
    for (int r = 0; r < 2; r++) {
        int row = r * 4 + t;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(b[r]) : "f"(B[row * 8 + g]));
    }
    float c[4], d[4];
    for (int r = 0; r < 4; r++) c[r] = C[C_ROW(r) * 8 + C_COL(r)];
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int r = 0; r < 4; r++) D[C_ROW(r) * 8 + C_COL(r)] = d[r];
}

// s8 x s8 -> s32, m16n8k32.
extern "C" __global__ void mma_s8_k32(const signed char *A, const signed char *B, const int *C, int *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    u32 a[4], b[2];
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r % 2), col = (r / 2) * 16 + 4 * t;
        a[r] = pack8(&A[row * 32 + col]);
    }
    for (int r = 0; r < 2; r++) {
        signed char v[4];
        for (int j = 0; j < 4; j++) v[j] = B[(r * 16 + 4 * t + j) * 8 + g];
        b[r] = pack8(v);
    }
    int c[4], d[4];
    for (int r = 0; r < 4; r++) c[r] = C[C_ROW(r) * 8 + C_COL(r)];
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int r = 0; r < 4; r++) D[C_ROW(r) * 8 + C_COL(r)] = d[r];
}

// f16 x f16 -> f16, m16n8k16: C and D are two .f16x2 registers
// (frag_c_f16).
extern "C" __global__ void mma_f16acc_k16(const u16 *A, const u16 *B, const u16 *C, u16 *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    u32 a[4], b[2], c[2], d[2];
    frag_a16(A, g, t, a);
    frag_b16(B, g, t, b);
    frag_c_f16(C, g, t, c);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
        "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "r"(c[0]), "r"(c[1]));
    store_d_f16(D, g, t, d);
}

// f16 x f16 -> f16, m16n8k8 (the shape sm_75 has): A is two .f16x2
// registers, a_r at row g + 8r, columns 2t and 2t + 1; B one, rows 2t and
// 2t + 1 of column g; C and D as for m16n8k16.
extern "C" __global__ void mma_f16acc_k8(const u16 *A, const u16 *B, const u16 *C, u16 *D) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    u32 a[2], b, c[2], d[2];
    for (int r = 0; r < 2; r++) {
        int row = g + 8 * r;
        a[r] = pack16(A[row * 8 + 2 * t], A[row * 8 + 2 * t + 1]);
    }
    b = pack16(B[(2 * t) * 8 + g], B[(2 * t + 1) * 8 + g]);
    frag_c_f16(C, g, t, c);
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 "
        "{%0,%1}, {%2,%3}, {%4}, {%5,%6};\n"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]));
    store_d_f16(D, g, t, d);
}

// f16 m16n8k16 through shared memory: A and B arrive by cp.async (NVIDIA's
// pipeline primitives), fragments come from ldmatrix. A is [16][16]
// row-major; B is given row-major [16][8] and read with ldmatrix .trans.
extern "C" __global__ void mma_f16_ldmatrix(const u16 *A, const u16 *B, const float *C, float *D) {
    __shared__ __align__(16) u16 sA[16 * 16];
    __shared__ __align__(16) u16 sB[16 * 8];
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    // 512 + 256 bytes: 48 chunks of 16 bytes, lanes take them in turn.
    for (int i = lane; i < 48; i += 32) {
        if (i < 32)
            __pipeline_memcpy_async(&sA[i * 8], &A[i * 8], 16);
        else
            __pipeline_memcpy_async(&sB[(i - 32) * 8], &B[(i - 32) * 8], 16);
    }
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncwarp();
    __syncthreads();
    u32 a[4], b[2];
    // x4: matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7),
    // (rows 0-7, cols 8-15), (rows 8-15, cols 8-15) = a0..a3.
    {
        int m = lane / 8, r = lane % 8;
        int row = r + 8 * (m % 2), col = 8 * (m / 2);
        u32 addr = (u32)__cvta_generic_to_shared(&sA[row * 16 + col]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                     : "r"(addr));
    }
    // x2.trans: matrices (k rows 0-7), (k rows 8-15) of B = b0, b1.
    {
        int r = lane % 16;
        u32 addr = (u32)__cvta_generic_to_shared(&sB[r * 8]);
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                     : "=r"(b[0]), "=r"(b[1])
                     : "r"(addr));
    }
    float c[4], d[4];
    for (int r = 0; r < 4; r++) c[r] = C[C_ROW(r) * 8 + C_COL(r)];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int r = 0; r < 4; r++) D[C_ROW(r) * 8 + C_COL(r)] = d[r];
}

// A cp.async whose destination is read before the wait: a race that the
// simulator's racecheck must report.
extern "C" __global__ void cp_async_read_before_wait(const float *X, float *Y) {
    __shared__ __align__(16) float s[32 * 4];
    int lane = threadIdx.x;
    __pipeline_memcpy_async(&s[lane * 4], &X[lane * 4], 16);
    __pipeline_commit();
    float early = s[((lane + 1) % 32) * 4];
    __pipeline_wait_prior(0);
    __syncthreads();
    Y[lane] = early + s[((lane + 1) % 32) * 4];
}

// Two stages in flight: wait_prior(1) lands only the first group.
extern "C" __global__ void cp_async_two_stages(const float *X, float *Y) {
    __shared__ __align__(16) float s[2][32 * 4];
    int lane = threadIdx.x;
    __pipeline_memcpy_async(&s[0][lane * 4], &X[lane * 4], 16);
    __pipeline_commit();
    __pipeline_memcpy_async(&s[1][lane * 4], &X[128 + lane * 4], 16);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    float first = s[0][((lane + 1) % 32) * 4 + 1];
    __pipeline_wait_prior(0);
    __syncthreads();
    Y[lane] = first * 2.0f + s[1][((lane + 3) % 32) * 4 + 2];
}

// Reads the second stage after wait_prior(1), which completes only the
// first group: a race that racecheck must report.
extern "C" __global__ void cp_async_second_stage_early(const float *X, float *Y) {
    __shared__ __align__(16) float s[2][32 * 4];
    int lane = threadIdx.x;
    __pipeline_memcpy_async(&s[0][lane * 4], &X[lane * 4], 16);
    __pipeline_commit();
    __pipeline_memcpy_async(&s[1][lane * 4], &X[128 + lane * 4], 16);
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    Y[lane] = s[1][((lane + 3) % 32) * 4 + 2];
}
