/* StarPU codelets of wire (CPU, CUDA, OpenCL): a compress and a
 * decompress codelet per format, each with its performance model
 * starnn_compress_<format> / starnn_decompress_<format> keyed by the
 * buffers' shapes (the naming of codelets/wire.h). compress: x (R, rows x
 * cols fp32) -> wire (W, bytes); decompress: wire (R) -> y (W). The
 * kernels take no arguments besides the buffers: the format is the
 * codelet's. */
#include "codelets/wire.h" /* and its kernels, codelets/kernels/wire.h */
#include "runtime/core/codelet.h"

#ifdef STARNN_USE_CUDA
#define WIRE_CUDA_FUNCS(fmt, F)                                                                             \
	static void compress_##fmt##_cuda(void *buffers[], void *cl_arg)                                  \
	{                                                                                                  \
		(void)cl_arg;                                                                              \
		struct starnn_mat x = starnn_buffer(buffers, 0), w = starnn_buffer(buffers, 1);            \
		starnn_compress_cuda(F, x.rows, x.cols, x.ptr, x.ld, w.ptr, starnn_cuda_stream());         \
		STARNN_CUDA_LAUNCHED("compress_" #fmt);                                                   \
	}                                                                                                  \
	static void decompress_##fmt##_cuda(void *buffers[], void *cl_arg)                                \
	{                                                                                                  \
		(void)cl_arg;                                                                              \
		struct starnn_mat w = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);            \
		starnn_decompress_cuda(F, y.rows, y.cols, w.ptr, y.ptr, y.ld, starnn_cuda_stream());       \
		STARNN_CUDA_LAUNCHED("decompress_" #fmt);                                                 \
	}
#define WIRE_CUDA_FIELDS(fn) .cuda_funcs = {fn}, .cuda_flags = {STARPU_CUDA_ASYNC},
#else
#define WIRE_CUDA_FUNCS(fmt, F)
#define WIRE_CUDA_FIELDS(fn)
#endif

#ifdef STARNN_USE_OPENCL
#define WIRE_OPENCL_FUNCS(fmt, F)                                                                           \
	static void compress_##fmt##_opencl(void *buffers[], void *cl_arg)                                \
	{                                                                                                  \
		(void)cl_arg;                                                                              \
		struct starnn_clmat x = starnn_cl_buffer(buffers, 0), w = starnn_cl_buffer(buffers, 1);    \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(wire);                                   \
		if (ctx)                                                                                   \
			STARNN_OPENCL_LAUNCHED(ctx, "compress_" #fmt,                                     \
			                       starnn_compress_opencl(ctx, F, x.rows, x.cols, x.mem, x.off, x.ld, \
			                                              w.mem, w.off));                    \
	}                                                                                                  \
	static void decompress_##fmt##_opencl(void *buffers[], void *cl_arg)                              \
	{                                                                                                  \
		(void)cl_arg;                                                                              \
		struct starnn_clmat w = starnn_cl_buffer(buffers, 0), y = starnn_cl_buffer(buffers, 1);    \
		struct starnn_opencl_ctx *ctx = STARNN_OPENCL_CTX(wire);                                   \
		if (ctx)                                                                                   \
			STARNN_OPENCL_LAUNCHED(ctx, "decompress_" #fmt,                                   \
			                       starnn_decompress_opencl(ctx, F, y.rows, y.cols, w.mem, w.off,     \
			                                                y.mem, y.off, y.ld));            \
	}
#else
#define WIRE_OPENCL_FUNCS(fmt, F)
#endif

/* The CPU, CUDA and OpenCL functions, perfmodels and codelets of one format. */
#define WIRE_CODELETS(fmt, F)                                                                               \
	static void compress_##fmt##_cpu(void *buffers[], void *cl_arg)                                   \
	{                                                                                                  \
		(void)cl_arg;                                                                              \
		struct starnn_mat x = starnn_buffer(buffers, 0), w = starnn_buffer(buffers, 1);            \
		starnn_compress_cpu(F, x.rows, x.cols, x.ptr, x.ld, w.ptr);                                \
	}                                                                                                  \
	static void decompress_##fmt##_cpu(void *buffers[], void *cl_arg)                                 \
	{                                                                                                  \
		(void)cl_arg;                                                                              \
		struct starnn_mat w = starnn_buffer(buffers, 0), y = starnn_buffer(buffers, 1);            \
		starnn_decompress_cpu(F, y.rows, y.cols, w.ptr, y.ptr, y.ld);                              \
	}                                                                                                  \
	WIRE_CUDA_FUNCS(fmt, F)                                                                           \
	WIRE_OPENCL_FUNCS(fmt, F)                                                                         \
	static STARNN_PERFMODEL(compress, fmt);                                                           \
	static STARNN_PERFMODEL(decompress, fmt);                                                         \
	static struct starpu_codelet compress_##fmt##_cl = {                                              \
		.name = "compress_" #fmt,                                                                 \
		.cpu_funcs = {compress_##fmt##_cpu},                                                      \
		.cpu_funcs_name = {"compress_" #fmt "_cpu"},                                              \
		WIRE_CUDA_FIELDS(compress_##fmt##_cuda)                                                   \
		STARNN_OPENCL_FUNCS(compress_##fmt##_opencl)                                              \
		.nbuffers = 2,                                                                             \
		.modes = {STARPU_R, STARPU_W},                                                             \
		STARNN_MODELS(compress, fmt),                                                             \
	};                                                                                                 \
	static struct starpu_codelet decompress_##fmt##_cl = {                                            \
		.name = "decompress_" #fmt,                                                               \
		.cpu_funcs = {decompress_##fmt##_cpu},                                                    \
		.cpu_funcs_name = {"decompress_" #fmt "_cpu"},                                            \
		WIRE_CUDA_FIELDS(decompress_##fmt##_cuda)                                                 \
		STARNN_OPENCL_FUNCS(decompress_##fmt##_opencl)                                            \
		.nbuffers = 2,                                                                             \
		.modes = {STARPU_R, STARPU_W},                                                             \
		STARNN_MODELS(decompress, fmt),                                                           \
	};

WIRE_CODELETS(fp32, STARNN_WIRE_FP32)
WIRE_CODELETS(trunc24, STARNN_WIRE_TRUNC24)
WIRE_CODELETS(rne24, STARNN_WIRE_RNE24)
WIRE_CODELETS(trunc16, STARNN_WIRE_TRUNC16)
WIRE_CODELETS(rne16, STARNN_WIRE_RNE16)
WIRE_CODELETS(bf16, STARNN_WIRE_BF16)
WIRE_CODELETS(fp16, STARNN_WIRE_FP16)
WIRE_CODELETS(int8, STARNN_WIRE_INT8)
WIRE_CODELETS(fp8, STARNN_WIRE_FP8)

static struct starpu_codelet *const compress_cl[STARNN_WIRE_NFORMATS] = {
	[STARNN_WIRE_FP32] = &compress_fp32_cl,       [STARNN_WIRE_TRUNC24] = &compress_trunc24_cl,
	[STARNN_WIRE_RNE24] = &compress_rne24_cl,     [STARNN_WIRE_TRUNC16] = &compress_trunc16_cl,
	[STARNN_WIRE_RNE16] = &compress_rne16_cl,     [STARNN_WIRE_BF16] = &compress_bf16_cl,
	[STARNN_WIRE_FP16] = &compress_fp16_cl,       [STARNN_WIRE_INT8] = &compress_int8_cl,
	[STARNN_WIRE_FP8] = &compress_fp8_cl,
};
static struct starpu_codelet *const decompress_cl[STARNN_WIRE_NFORMATS] = {
	[STARNN_WIRE_FP32] = &decompress_fp32_cl,     [STARNN_WIRE_TRUNC24] = &decompress_trunc24_cl,
	[STARNN_WIRE_RNE24] = &decompress_rne24_cl,   [STARNN_WIRE_TRUNC16] = &decompress_trunc16_cl,
	[STARNN_WIRE_RNE16] = &decompress_rne16_cl,   [STARNN_WIRE_BF16] = &decompress_bf16_cl,
	[STARNN_WIRE_FP16] = &decompress_fp16_cl,     [STARNN_WIRE_INT8] = &decompress_int8_cl,
	[STARNN_WIRE_FP8] = &decompress_fp8_cl,
};

/* data: fp32 (any shape, views too); wire: a dense u8 tensor of exactly
 * starnn_wire_bytes(f, numel(data)) bytes. */
static int check_wire(const char *op, const char *dn, const starnn_tensor *data, starnn_wire_format f,
                      const starnn_tensor *wire)
{
	char dd[128], dw[128];
	if (!data || !wire)
		return starnn_error(STARNN_EINVAL, "%s: %s is NULL", op, !data ? dn : "wire");
	if ((unsigned)f >= STARNN_WIRE_NFORMATS)
		return starnn_error(STARNN_EINVAL, "%s: unknown wire format %d", op, (int)f);
	starnn_tensor_describe(data, dd, sizeof dd);
	starnn_tensor_describe(wire, dw, sizeof dw);
	if (data->dtype != STARNN_FP32)
		return starnn_error(STARNN_EINVAL, "%s: %s must be fp32, got %s", op, dn, dd);
	if (wire->dtype != STARNN_U8)
		return starnn_error(STARNN_EINVAL, "%s: the wire must be a u8 tensor, got %s", op, dw);
	size_t n = data->rows * data->cols, bytes = starnn_wire_bytes(f, n);
	if (wire->rows * wire->cols != bytes)
		return starnn_error(STARNN_EINVAL, "%s: %s of %zu values needs a wire of %zu bytes, got %s", op,
		                    starnn_wire_name(f), n, bytes, dw);
	if (wire->rows > 1 && wire->ld != wire->cols)
		return starnn_error(STARNN_EINVAL, "%s: the wire must be dense, got the view %s (ld %zu)", op, dw,
		                    wire->ld);
	if (data == wire)
		return starnn_error(STARNN_EINVAL, "%s: %s and the wire are the same tensor", op, dn);
	return 0;
}

/* One operation per value (the per-value formats: a few integer
 * operations; blocks: a division or a multiplication); the fp32 format is
 * a copy. From the data's shape, a key of the footprint. */
static double wire_flops(starnn_wire_format f, const starnn_tensor *data)
{
	return f == STARNN_WIRE_FP32 ? STARNN_NO_FLOPS : (double)(data->rows * data->cols);
}

int starnn_compress(starnn_tensor *x, starnn_wire_format f, starnn_tensor *wire)
{
	STARNN_CHECK(check_wire("compress", "x", x, f, wire));
	struct starnn_task_desc d = {.cl = compress_cl[f], .tensors = {x, wire}, .flops = wire_flops(f, x)};
	return starnn_submit(&d);
}

int starnn_decompress(starnn_tensor *wire, starnn_wire_format f, starnn_tensor *y)
{
	STARNN_CHECK(check_wire("decompress", "y", y, f, wire));
	struct starnn_task_desc d = {.cl = decompress_cl[f], .tensors = {wire, y}, .flops = wire_flops(f, y)};
	return starnn_submit(&d);
}
