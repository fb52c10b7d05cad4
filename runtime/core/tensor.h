/* Tensors: up to 4-D (NCHW), fp32 / fp16 / bf16, registered with StarPU;
 * and u8 byte buffers (the wire buffers of codelets/wire.h), which no
 * operation computes on.
 *
 * A tensor is seen by StarPU as a matrix: one row per sample (shape[0]) and
 * `cols` = product of the other dimensions elements per row, rows `ld`
 * elements apart. That makes the two partitions a training step needs free:
 *   - batch (axis 0): rows [r0, r1): micro-batches;
 *   - channels (axis 1): columns [c0*H*W, c1*H*W) of every row, same ld:
 *     the halves of a concatenation, without a copy.
 * Kernels therefore receive (rows, cols, ld) and never assume ld == cols.
 *
 * A 1-D tensor of n elements is one row of n columns. */
#ifndef STARNN_TENSOR_H
#define STARNN_TENSOR_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <starpu.h>

#include "runtime/base/error.h"
#include "runtime/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STARNN_MAX_DIMS 4
#define STARNN_NAME_MAX 64

/* The compute dtypes only ("fp32", "fp16", "bf16"): "u8" is refused, so
 * that no option a user types can make bytes a precision. */
int starnn_dtype_parse(const char *name, starnn_dtype *dtype);

typedef struct starnn_tensor starnn_tensor;
struct starnn_tensor {
	char name[STARNN_NAME_MAX];      /* shown in task names and traces */
	starnn_dtype dtype;
	int ndim;
	int64_t shape[STARNN_MAX_DIMS];
	size_t rows, cols, ld;           /* the StarPU matrix view (see above) */
	void *host;                      /* owned host buffer; NULL for parts */
	starpu_data_handle_t handle;

	/* Partition plans (starnn_tensor_split): each plan's parts are tensors
	 * too. Either one plan is active read-write (its parts hold the data),
	 * or t holds the data and any number of plans are active read-only
	 * (tasks may read t and the parts of those plans at the same time);
	 * the submit layer switches plans as tasks need, asynchronously.
	 * parts / nparts are those of the first plan made (the usual case of a
	 * single plan: micro-batches, or the halves of a concatenation). */
	starnn_tensor **parts;
	int nparts;
	struct starnn_plan **plans;      /* each allocated once: StarPU keeps filter args */
	int nplans;
	int active_plan;                 /* index into plans, -1: t holds its data */
	uint64_t ro_plans;               /* bit p: plan p active read-only */
	starnn_tensor *parent;           /* for a part: the tensor split */
	int parent_plan;                 /* for a part: which plan of parent */

	/* Layout of a 4-D activation: 1 (plain NCHW), or its channels in
	 * blocks of cblock, a multiple of 8 up to STARNN_CBLOCK_MAX (oneDNN's
	 * nChw8c / nChw16c for 8 / 16; cblock = C is NHWC): each sample is
	 * [C/cblock][H][W][cblock]. The matrix view is the same either way (a
	 * sample is a row of C*H*W elements, and channels [c0, c1) with c0, c1
	 * multiples of cblock are columns [c0*H*W, c1*H*W) of it), so batch
	 * and channel parts work alike; only the kernels that index within a
	 * sample read it. starnn_tensor_read / _write always exchange NCHW. */
	int cblock;

	/* Layout of weights [o][i][taps] (a weight gradient written by the
	 * kernel of its pass in the kernel's own layout: codelets/conv2d.h):
	 * wl.ob = 0, rows of OIHW as the matrix view says; else the data are
	 * those of layout wl (fp32, channels in whole blocks, no padding,
	 * header and align 0: a band of whole blocks of rows holds the same
	 * elements, and the same bytes of the matrix view, in either layout).
	 * Set on a whole, dense, unpartitioned fp32 tensor before it holds
	 * values (starnn_tensor_set_wlayout); element-wise operations need
	 * their tensors in one layout (runtime/core/codelet.h), the optimizers read
	 * a gradient through it (codelets/copy.h: starnn_copies_grad), and
	 * starnn_tensor_read / _write exchange OIHW. wl_fixed: the layout was
	 * chosen, by its first writer. */
	struct starnn_blocked_weights wl;
	int wl_fixed;

	/* Memory node of the last placed task that wrote it, -1 if unknown;
	 * see starnn_set_edge_hook(). */
	int node;
	/* Pinned (starnn_tensor_pin): every task that reads or writes it runs
	 * on the workers of memory node pin_node (runtime/core/submit.h). near:
	 * 1 + the memory node of its last writer when that task was placed by
	 * a pin or by near data, else 0; the tasks that read it follow it
	 * there. Both are 0 unless something was pinned. */
	int pinned, pin_node;
	int near;

	/* Incremented at every submission that writes t or one of its parts
	 * (tasks, MPI receives, starnn_tensor_write: starnn_tensor_prepare),
	 * so a copy made from t knows at submission time whether t changed
	 * since (not changed by writes to t's parent: ask the root). */
	uint64_t version;
	/* The priority of the tasks that write it (runtime/core/submit.h), 0 but
	 * for the parameters' side (STARNN_PRIO_PARAM); set on a whole tensor
	 * (its parts' writers take their root's, whenever the parts were made). */
	int priority;
	/* Tensors derived from t (starnn_tensor_derived), destroyed with it. */
	struct starnn_derived *derived;
	int nderived;
};

/* A tensor derived from another one: its weights packed into a kernel's
 * layout (codelets/conv2d.c), under a key the deriving code chooses. d is
 * NULL where the key needs no copy (remembered so as not to ask again);
 * version is the source's version the copy was last made from (the
 * deriving code sets it when it submits the task that makes the copy).
 * layout: where the copy is a blocked weight layout (ob != 0), a task that
 * writes the source may write the copy too, element by element, and keep
 * it current (the optimizers do: starnn_tensor_copies). used: read since
 * the last such task (starnn_tensor_use_derived). */
struct starnn_derived {
	uint64_t key;
	uint64_t version;
	starnn_tensor *d;
	struct starnn_blocked_weights layout;
	int used;
};
#define STARNN_DERIVED_MAX 8

/* The alignment of tensor storage in main memory, in bytes (starnn_init
 * sets it for starpu_malloc): a cache line, so that 64-byte vector loads
 * and stores of a tensor's rows do not straddle two. oneDNN's AMX matmul
 * wrote a 512 x 4608 fp32 result 1.8x slower at glibc malloc's 16-byte
 * alignment than at 64 (one thread, 2.52 against 1.42 ms). */
#define STARNN_TENSOR_ALIGN 64

/* Creates a tensor with zeroed host storage registered in main memory.
 * shape has ndim (1..4) positive entries. */
int starnn_tensor_create(starnn_tensor **out, const char *name, starnn_dtype dtype,
                         int ndim, const int64_t *shape);
/* A tensor without host storage, registered with home node -1: StarPU
 * allocates it on the memory node of its first writer and never copies it
 * to main memory (a device's own copy of a parameter, runtime/train/params.h).
 * Only tasks read it (not starnn_tensor_read); not on a device-free
 * machine either: there StarPU allocates it in main memory. */
int starnn_tensor_create_nohome(starnn_tensor **out, const char *name, starnn_dtype dtype, int ndim,
                                const int64_t *shape);
/* Same, shape given as arguments: starnn_tensor_new(&t, "x", STARNN_FP32, 2, 8, 16). */
int starnn_tensor_new(starnn_tensor **out, const char *name, starnn_dtype dtype, int ndim, ...);
/* Waits for the tasks using it, then unregisters and frees it (and its
 * parts). NULL is accepted. */
void starnn_tensor_destroy(starnn_tensor *t);

/* The entry of t under key, NULL if there is none. */
struct starnn_derived *starnn_tensor_derived(starnn_tensor *t, uint64_t key);
/* Adds an entry (d may be NULL, see struct starnn_derived) with version
 * UINT64_MAX (never made); t owns d from then on. NULL, without taking d,
 * when t already has STARNN_DERIVED_MAX entries (the caller goes without). */
struct starnn_derived *starnn_tensor_add_derived(starnn_tensor *t, uint64_t key, starnn_tensor *d);
/* Whether t is a whole tensor or a part of one along axis 0 (rows): then
 * *root is the whole tensor and *row0 t's first row in it; 0 otherwise
 * (a channel part, a part of a part). */
int starnn_tensor_row_part(starnn_tensor *t, starnn_tensor **root, size_t *row0);
/* Marks e as read by a task being submitted (see used above). */
void starnn_tensor_use_derived(struct starnn_derived *e);
/* Copies that a task about to write all of t may keep current: t's derived
 * entries with a blocked weight layout of t's shape (t whole, [o, i, ...]
 * with i * taps columns; the copies are fp32: of t's values widened where t
 * is 16-bit), made at least once (their padding and
 * descriptor are in place) and used since the last such task; up to max
 * of them into out, their count returned. After submitting the task that
 * writes t and them, starnn_tensor_copies_written(t, out, n) records them
 * as made from t's new version. */
int starnn_tensor_copies(starnn_tensor *t, struct starnn_derived **out, int max);
void starnn_tensor_copies_written(starnn_tensor *t, struct starnn_derived **c, int n);

/* Sets the layout of a 4-D tensor (see cblock above) before any task uses
 * it or any part of it is made: cblock 1, or a multiple of 8 up to
 * STARNN_CBLOCK_MAX dividing its channels. Its contents are kept (as NCHW
 * values). Parts inherit the layout; a channel split of a blocked tensor
 * must cut at multiples of cblock. */
int starnn_tensor_set_cblock(starnn_tensor *t, int cblock);
/* Sets the weight layout of t (see wl above; L NULL or L->ob 0: OIHW)
 * and marks it chosen. t: fp32, whole, dense (ld = cols), no partition,
 * rows = L->o and cols = L->i * L->taps, L->o and L->i whole blocks, L
 * fp32 (pair 0) with header and align 0. Its data are not converted: set
 * it before t holds values. */
int starnn_tensor_set_wlayout(starnn_tensor *t, const struct starnn_blocked_weights *L);
/* Whether kernels may choose blocked weight layouts for the tensors they
 * write (above): on, unless turned off (runtime/train/dist.c turns it off with
 * several ranks: a gradient crosses the wire, and wire formats read rows). */
void starnn_tensor_allow_wlayouts(int on);
int starnn_tensor_wlayouts_allowed(void);
/* "OIHW", or the oneDNN name of a blocked weight layout ("OIhw16i16o",
 * "OIhw16o16i", "OIhw8i8o", "OIhw8o8i"; bf16 pairs "OIhw8i16o2i",
 * "OIhw8o16i2o") in buf. */
const char *starnn_wlayout_name(const struct starnn_blocked_weights *L, char *buf, size_t size);

/* The name of the layout of blocks of cblock among `channels` (0: not
 * known) in buf: "NCHW", "NHWC" (one block), "nChw8c", "nChw16c", ... */
const char *starnn_layout_name(int cblock, int64_t channels, char *buf, size_t size);

size_t starnn_tensor_numel(const starnn_tensor *t);
/* Product of the dimensions after the first two (H*W for NCHW). */
size_t starnn_tensor_inner(const starnn_tensor *t);
int starnn_tensor_same_shape(const starnn_tensor *a, const starnn_tensor *b);
/* "x[8,16,32,32] fp32" into buf. */
const char *starnn_tensor_describe(const starnn_tensor *t, char *buf, size_t size);

/* Copies between the tensor and a dense host array of numel elements of the
 * tensor's dtype. Both wait for the tasks that use the tensor; read also
 * returns any error raised by those tasks. */
int starnn_tensor_write(starnn_tensor *t, const void *src);
int starnn_tensor_read(starnn_tensor *t, void *dst);
/* Reads one fp32/fp16/bf16 tensor as fp32 (STARNN_EINVAL for u8). */
int starnn_tensor_read_f32(starnn_tensor *t, float *dst);
int starnn_tensor_write_f32(starnn_tensor *t, const float *src);

/* Memory accounting (what is counted, honestly):
 *   - starnn's own count of tensor storage: the bytes of the host buffer
 *     of every live tensor (starnn_tensor_create allocates it in main
 *     memory, memory node 0), now and at its peak since the program began.
 *     Parts (views) add nothing. Kernel scratch (e.g. the per-thread fp32
 *     buffers of 16-bit GEMM on CPU) and StarPU's own buffers are not in it.
 *   - StarPU's count per memory node (total - available, StarPU 1.3): what
 *     StarPU allocated there itself, e.g. the copies of tensors on a GPU;
 *     known where StarPU manages a size (GPUs; main memory only with
 *     STARPU_LIMIT_CPU_MEM). It is a current value; starnn_memory_sample() keeps its maximum over the
 *     moments it is called (a model calls it after each step), so the peak
 *     reported for a GPU node is a sampled one. */
size_t starnn_tensor_bytes(size_t *peak);
void starnn_memory_sample(void);
/* Prints one line per memory node, "peak memory node N: X MiB (...)",
 * saying which count it is. */
void starnn_memory_report(FILE *f);

struct starnn_plan {
	int axis;                        /* 0: batch (rows), 1: channels */
	int nparts;
	uint32_t *bounds;                /* nparts + 1 boundaries along axis */
	size_t inner;                    /* elements per channel (axis 1) */
	starnn_tensor **parts;
};

/* Plans a partition of t into nparts along axis 0 (batch: rows) or axis 1
 * (channels: columns, by whole channels); a 1-D tensor (a per-channel
 * vector) splits along its axis 0. sizes gives the extent of each
 * part along the axis, or NULL for a split as even as possible. The parts
 * (named "<name>[i]"; t->parts for the first plan of t) are used like any
 * tensor; starnn_submit partitions and gathers the data as the tasks need,
 * without waiting. A tensor may have several plans (e.g. micro-batches for
 * the trainer and channel blocks inside an operation); an identical plan
 * is reused. parts_out may be NULL. */
int starnn_tensor_split(starnn_tensor *t, int axis, int nparts, const int64_t *sizes,
                        starnn_tensor ***parts_out);
/* Submits the gather of the parts into t now (normally automatic). */
int starnn_tensor_gather(starnn_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
