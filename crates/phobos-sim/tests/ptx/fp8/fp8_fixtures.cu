// CUDA C fixtures for phobos-sim's 8-bit float instructions (sm_89 and
// newer): the `cvt` forms to and from `.e4m3x2`/`.e5m2x2`, and `mma.sync`
// m16n8k32 with `.e4m3`/`.e5m2` operands.
//
// Compiled to PTX by NVIDIA's nvrtc for compute_89 (scripts/nvrtc-fixtures.py),
// never by Phobos, so the simulator's conversions and fragment layouts are
// checked against PTX NVIDIA's compiler produced: the element placement
// follows the PTX ISA's "Matrix Fragments for mma.m16n8k32" table (the
// 8-bit one, shared by .s8/.u8/.e4m3/.e5m2). No headers: the instructions
// are written as inline PTX, as cuda_fp8.hpp writes them.
//
// Every kernel runs as one warp (32 threads).

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

// Conversions, 8 pairs per lane (256 pairs): from the f32 pair
// (X[2i + 1], X[2i]) into E4[i] / E5[i] (`a` the high byte, `b` the low
// one), the same with .relu into R4[i]; from the f16x2 HX[i] into F4[i];
// and back: the e4m3 pair P4[i] and the e5m2 pair P5[i] widened to the
// f16x2 H4[i] / H5[i].
extern "C" __global__ void cvt_f8(const float *X, const u32 *HX, const u16 *P4, const u16 *P5,
                                  u16 *E4, u16 *E5, u16 *R4, u16 *F4, u32 *H4, u32 *H5) {
    for (int j = 0; j < 8; j++) {
        int i = threadIdx.x * 8 + j;
        float hi = X[2 * i + 1], lo = X[2 * i];
        u16 e4, e5, r4, f4;
        u32 h4, h5;
        asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(e4) : "f"(hi), "f"(lo));
        asm volatile("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(e5) : "f"(hi), "f"(lo));
        asm volatile("cvt.rn.satfinite.relu.e4m3x2.f32 %0, %1, %2;" : "=h"(r4) : "f"(hi), "f"(lo));
        asm volatile("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(f4) : "r"(HX[i]));
        asm volatile("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h4) : "h"(P4[i]));
        asm volatile("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h5) : "h"(P5[i]));
        E4[i] = e4;
        E5[i] = e5;
        R4[i] = r4;
        F4[i] = f4;
        H4[i] = h4;
        H5[i] = h5;
    }
}

__device__ u32 pack8(u8 a, u8 b, u8 c, u8 d) {
    return (u32)a | ((u32)b << 8) | ((u32)c << 16) | ((u32)d << 24);
}

// C/D fragment of f32 accumulators: c_r at row g + 8 * (r / 2), col 2t + r % 2.
#define C_ROW(r) (g + 8 * ((r) / 2))
#define C_COL(r) (2 * t + (r) % 2)

// D[16][8] = A[16][32] * B[32][8] + C[16][8] (row-major bytes and f32):
// a_r at row g + 8 (r % 2), columns (r / 2) * 16 + 4t .. + 3; b_r at rows
// r * 16 + 4t .. + 3, column g. A is e4m3 and B e5m2 in the first kernel,
// the other way round in the second, so each operand position decodes
// both formats.
#define MMA_F8(NAME, TA, TB)                                                              \
    extern "C" __global__ void NAME(const u8 *A, const u8 *B, const float *C, float *D) {  \
        int lane = threadIdx.x, g = lane >> 2, t = lane & 3;                               \
        u32 a[4], b[2];                                                                    \
        for (int r = 0; r < 4; r++) {                                                      \
            const u8 *p = &A[(g + 8 * (r % 2)) * 32 + (r / 2) * 16 + 4 * t];               \
            a[r] = pack8(p[0], p[1], p[2], p[3]);                                          \
        }                                                                                  \
        for (int r = 0; r < 2; r++) {                                                      \
            int row = r * 16 + 4 * t;                                                      \
            b[r] = pack8(B[row * 8 + g], B[(row + 1) * 8 + g], B[(row + 2) * 8 + g],       \
                         B[(row + 3) * 8 + g]);                                            \
        }                                                                                  \
        float c[4], d[4];                                                                  \
        for (int r = 0; r < 4; r++) c[r] = C[C_ROW(r) * 8 + C_COL(r)];                     \
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TA "." TB ".f32 "            \
                     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"         \
                     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                      \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),   \
                       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));                        \
        for (int r = 0; r < 4; r++) D[C_ROW(r) * 8 + C_COL(r)] = d[r];                     \
    }

MMA_F8(mma_e4m3_e5m2_k32, "e4m3", "e5m2")
MMA_F8(mma_e5m2_e4m3_k32, "e5m2", "e4m3")
