/* Kernels of fill: y = value. Shapes: y is rows x cols, row-major, leading
 * dimension ldy; only its rows x cols are written, never the elements in
 * between (a channel view). fp32 takes the value; fp16 and bf16 take its
 * 16-bit pattern (converted by the caller), so one kernel serves both. The
 * CUDA kernels are asynchronous on stream (a cudaStream_t). */
#ifndef STARNN_KERNELS_FILL_H
#define STARNN_KERNELS_FILL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* codelets/cpu/fill.c */
void starnn_fill_f32_cpu(size_t rows, size_t cols, float value, float *y, size_t ldy);
void starnn_fill_16_cpu(size_t rows, size_t cols, uint16_t bits, uint16_t *y, size_t ldy);

/* codelets/cuda/fill.cu */
void starnn_fill_f32_cuda(size_t rows, size_t cols, float value, float *y, size_t ldy, void *stream);
void starnn_fill_16_cuda(size_t rows, size_t cols, uint16_t bits, uint16_t *y, size_t ldy, void *stream);

#ifdef __cplusplus
}
#endif
#endif
