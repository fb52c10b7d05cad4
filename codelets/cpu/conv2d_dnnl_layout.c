/* The oneDNN kernels' weight layouts and probes (codelets/cpu/conv2d_dnnl.h):
 * which of oneDNN's blocked weight formats runtime/base/types.h describes
 * (struct starnn_blocked_weights: what the optimizers can write), the
 * layout probes that answer which one a pass's primitive reads or writes
 * (remembered per key), weights packed once for many calls and slices of
 * whole blocked copies, and the probes of what oneDNN does on this
 * processor (its activation block, bf16). */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "codelets/cpu/conv2d_dnnl.h"

/* A blocked weight layout that runtime/base/types.h describes and its
 * oneDNN tag. */
struct layout_tag {
	dnnl_format_tag_t tag;
	dnnl_data_type_t type;
	uint32_t ob, ib, i_inner, pair;
};

/* A convolution's (fp32 OIhw8i8o, OIhw8o8i, OIhw16i16o, OIhw16o16i: what
 * the AVX2 and AVX-512 fp32 kernels take; bf16 in pairs, ABcd8b16a2b and
 * ABcd8a16b2a: what the AVX512-BF16 kernels take). */
static const struct layout_tag known_layouts[] = {{dnnl_ABcd8b8a, dnnl_f32, 8, 8, 0, 0},       {dnnl_ABcd8a8b, dnnl_f32, 8, 8, 1, 0},
                     {dnnl_ABcd16b16a, dnnl_f32, 16, 16, 0, 0},    {dnnl_ABcd16a16b, dnnl_f32, 16, 16, 1, 0},
                     {dnnl_ABcd8b16a2b, dnnl_bf16, 16, 16, 0, 2}, {dnnl_ABcd8a16b2a, dnnl_bf16, 16, 16, 1, 2},
                     /* output channels alone in blocks, [O / ob][taps][I][ob] (inputs of a few channels:
                      * the first layer): one block of all the input channels (ib 0 here: I, rounded up to
                      * pairs for bf16, AcdB16a2b: [O / 16][taps][I / 2][16][2]) */
                     {dnnl_Acdb8a, dnnl_f32, 8, 0, 0, 0},          {dnnl_Acdb16a, dnnl_f32, 16, 0, 0, 0},
                     {dnnl_AcdB16a2b, dnnl_bf16, 16, 0, 0, 2}};
#define NKNOWN (sizeof known_layouts / sizeof known_layouts[0])

/* A transposed convolution's weights as oneDNN sees them are [o, c, 2, 2]
 * (wei_md), PyTorch's [c, o, 2, 2] transposed: its "BA" layouts, whose
 * outer blocks run over c then o, are the layouts above of PyTorch's
 * tensor (rows c, inner channels o), with the roles of a and b swapped. */
static const struct layout_tag deconv_layouts[] = {
	{dnnl_BAcd16a16b, dnnl_f32, 16, 16, 0, 0},
	{dnnl_BAcd16b16a, dnnl_f32, 16, 16, 1, 0},
	{dnnl_BAcd8a16b2a, dnnl_bf16, 16, 16, 0, 2}}; /* (oneDNN 2.6 has no 8-blocks of these) */
#define NDECONV (sizeof deconv_layouts / sizeof deconv_layouts[0])

/* The entry of the n layouts t whose tag describes md (4-D), or NULL. */
static const struct layout_tag *layout_of(const dnnl_memory_desc_t *md, const struct layout_tag *t, size_t n)
{
	for (size_t k = 0; md->ndims == 4 && k < n; k++) {
		dnnl_memory_desc_t ref;
		if (md->data_type == t[k].type &&
		    dnnl_memory_desc_init_by_tag(&ref, 4, md->dims, t[k].type, t[k].tag) == dnnl_success &&
		    dnnl_memory_desc_equal(&ref, md))
			return &t[k];
	}
	return NULL;
}

/* (kind 0: ib other than ob is one block of all the input channels,
 * Acdb<ob>a) */
dnnl_format_tag_t starnn_dnnl_blocked_tag(int kind, size_t ob, size_t ib, size_t ii)
{
	if (kind) {
		for (size_t k = 0; k < NDECONV; k++)
			if (deconv_layouts[k].type == dnnl_f32 && deconv_layouts[k].ob == ob && deconv_layouts[k].ib == ib &&
			    deconv_layouts[k].i_inner == ii)
				return deconv_layouts[k].tag;
		return dnnl_format_tag_undef;
	}
	for (size_t k = 0; k < NKNOWN; k++)
		if (known_layouts[k].type == dnnl_f32 && known_layouts[k].ob == ob && known_layouts[k].i_inner == ii &&
		    (known_layouts[k].ib == ib || (!known_layouts[k].ib && ib != ob)))
			return known_layouts[k].tag;
	return dnnl_format_tag_undef;
}

/* ------------------------------------------------------- packed weights
 * A packed buffer holds the memory descriptor of the layout it was packed
 * into, then (64-byte aligned) the weights in that layout. */
#define PACK_ALIGN 64

static size_t pack_data_offset(const void *packed)
{
	uintptr_t p = (uintptr_t)packed + sizeof(dnnl_memory_desc_t);
	return (size_t)(((p + PACK_ALIGN - 1) & ~(uintptr_t)(PACK_ALIGN - 1)) - (uintptr_t)packed);
}

void *starnn_dnnl_packed_weights(const struct dnnl_conv *e, const void *packed)
{
	if (!packed || !e->ib)
		return NULL;
	const dnnl_memory_desc_t *md = NULL;
	if (dnnl_memory_get_memory_desc(e->ib, &md) != dnnl_success || !md ||
	    !dnnl_memory_desc_equal((const dnnl_memory_desc_t *)packed, md))
		return NULL;
	return (char *)packed + pack_data_offset(packed);
}

static int pack_pass_ok(int pass)
{
	return pass == STARNN_CONV2D_FWD || pass == STARNN_CONV2D_BWD_DATA;
}

/* (md: a transposed convolution's weights, [o, c, 2, 2], one of
 * deconv_layouts) */
void starnn_dnnl_deconv_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	const struct layout_tag *t = layout_of(md, deconv_layouts, NDECONV);
	if (t)
		*L = (struct starnn_blocked_weights){(uint32_t)md->dims[1], (uint32_t)md->dims[0],
		                                     (uint32_t)(md->dims[2] * md->dims[3]), t->ob, t->ib, t->i_inner, 0, 0,
		                                     t->pair, 0};
}

/* (md: one of known_layouts; a packed buffer's framing as header and
 * alignment) */
void starnn_dnnl_pack_layout(const dnnl_memory_desc_t *md, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	const struct layout_tag *t = layout_of(md, known_layouts, NKNOWN);
	if (!t)
		return;
	/* ib 0: one block of all the input channels, rounded up to pairs for
	 * bf16 */
	const uint32_t p = t->pair ? 2 : 1, ib = t->ib ? t->ib : ((uint32_t)md->dims[1] + p - 1) / p * p;
	*L = (struct starnn_blocked_weights){(uint32_t)md->dims[0],
	                                     (uint32_t)md->dims[1],
	                                     (uint32_t)(md->dims[2] * md->dims[3]),
	                                     t->ob,
	                                     ib,
	                                     t->i_inner,
	                                     (uint32_t)sizeof(dnnl_memory_desc_t),
	                                     PACK_ALIGN,
	                                     t->pair,
	                                     0};
}

size_t starnn_conv2d_dnnl_pack_bytes(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                     starnn_dtype dt, const struct starnn_conv2d_routes *r, size_t lda, size_t ldw,
                                     size_t ldout, float beta)
{
	return starnn_conv2d_dnnl_pack_info(pass, g, dt, r, lda, ldw, ldout, beta, NULL);
}

/* The answers of the layout probes below (starnn_conv2d_dnnl_pack_info,
 * starnn_dnnl_probe_layout), remembered per primitive key for the
 * process: some are asked at each submission of a pass (a transposed
 * convolution's copies, conv2d's sliced copies at batch 1), and each
 * answer costs building a primitive on the submitting thread. A key's
 * answer does not change within a process (the threads' caches rely on
 * the same: starnn_dnnl_key_equal). probe: which question (out | up << 1 |
 * deconv << 2); bytes: the size of the layout's data; a full table
 * replaces its entries in turn. Only answers from a primitive that was
 * built are kept (a failure, such as memory, is asked again). */
#define MEMO_SLOTS 256
struct layout_memo {
	struct dnnl_conv key;
	int probe;
	size_t bytes;
	struct starnn_blocked_weights L;
};
static struct layout_memo memo[MEMO_SLOTS];
static int memo_count, memo_next;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static int memo_get(const struct dnnl_conv *key, int probe, size_t *bytes, struct starnn_blocked_weights *L)
{
	int found = 0;
	pthread_mutex_lock(&memo_lock);
	for (int i = 0; i < memo_count && !found; i++)
		if (memo[i].probe == probe && starnn_dnnl_key_equal(&memo[i].key, key)) {
			*bytes = memo[i].bytes;
			*L = memo[i].L;
			found = 1;
		}
	pthread_mutex_unlock(&memo_lock);
	return found;
}

static void memo_put(const struct dnnl_conv *key, int probe, size_t bytes, const struct starnn_blocked_weights *L)
{
	pthread_mutex_lock(&memo_lock);
	struct layout_memo *m;
	if (memo_count < MEMO_SLOTS)
		m = &memo[memo_count++];
	else
		m = &memo[memo_next], memo_next = (memo_next + 1) % MEMO_SLOTS;
	m->key = *key;
	m->probe = probe;
	m->bytes = bytes;
	m->L = *L;
	pthread_mutex_unlock(&memo_lock);
}

size_t starnn_conv2d_dnnl_pack_info(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                    starnn_dtype dt, const struct starnn_conv2d_routes *r, size_t lda, size_t ldw,
                                    size_t ldout, float beta, struct starnn_blocked_weights *layout)
{
	if (layout)
		memset(layout, 0, sizeof *layout);
	if (!pack_pass_ok(pass) || (dt != STARNN_FP32 && dt != STARNN_BF16) || !g->n || !g->c || !g->o || !g->h ||
	    !g->w || starnn_conv2d_1x1_gemm(g, dt, r) ||
	    (pass == STARNN_CONV2D_FWD && starnn_conv2d_nchw_in_direct(g, dt, r))) /* (not on oneDNN: nothing to pack) */
		return 0;
	const struct dnnl_conv key =
		starnn_dnnl_key(0, (int)pass, dt, g, r, lda, ldw, pass == STARNN_CONV2D_FWD, beta, ldout);
	struct starnn_blocked_weights L;
	size_t data = 0;
	if (starnn_dnnl_probe_layout(&key, 0, 0, starnn_dnnl_pack_layout, &L, &data))
		L.header = (uint32_t)sizeof(dnnl_memory_desc_t), L.align = PACK_ALIGN; /* (a packed buffer's framing) */
	if (layout)
		*layout = L;
	return data ? sizeof(dnnl_memory_desc_t) + PACK_ALIGN + data : 0;
}

/* (the primitive is built here, on the submitting thread, the first time
 * a key is asked, then remembered: memo_get; and not kept: the workers
 * build the same primitive in their own caches) */
int starnn_dnnl_probe_layout(const struct dnnl_conv *key, int out, int up,
                             void (*take)(const dnnl_memory_desc_t *, struct starnn_blocked_weights *),
                             struct starnn_blocked_weights *L, size_t *data)
{
	memset(L, 0, sizeof *L);
	const int probe = out | up << 1 | (take == starnn_dnnl_deconv_layout) << 2;
	size_t bytes = 0;
	if (data)
		*data = 0;
	if (memo_get(key, probe, &bytes, L)) {
		if (data)
			*data = bytes;
		return L->ob != 0;
	}
	struct dnnl_conv *e = starnn_dnnl_engine_ok() ? malloc(sizeof *e) : NULL;
	if (!e)
		return 0;
	*e = *key;
	const dnnl_memory_desc_t *md = NULL;
	const int built = starnn_dnnl_conv_create(e) == 0;
	if (built && (out ? e->re_out && e->iout : e->re_b && e->ib) && (!up || e->zb) &&
	    dnnl_memory_get_memory_desc(out ? e->iout : e->ib, &md) == dnnl_success && md) {
		take(md, L);
		L->trans = up && L->ob;
		L->header = L->align = 0;
		bytes = md_bytes(md);
	}
	starnn_dnnl_conv_destroy(e);
	if (built)
		memo_put(key, probe, bytes, L);
	if (data)
		*data = bytes;
	return L->ob != 0;
}

int starnn_conv2d_dnnl_dw_layout(const struct starnn_conv2d_geom *g, starnn_dtype dt,
                                 const struct starnn_conv2d_routes *r, struct starnn_blocked_weights *L)
{
	memset(L, 0, sizeof *L);
	if ((dt != STARNN_FP32 && dt != STARNN_BF16) || !g->n || !g->c || !g->o || !g->h || !g->w ||
	    starnn_dnnl_wgrad_writes_oihw(g, dt, r))
		return 0;
	struct starnn_conv2d_geom plain = *g;
	plain.dwb = plain.dwi = plain.dwib = 0;
	const struct dnnl_conv key = starnn_dnnl_key(0, STARNN_CONV2D_BWD_WEIGHT, dt, &plain, r, g->c * g->h * g->w,
	                                             g->o * g->h * g->w, 1, 0.0f, g->c * g->k * g->k);
	if (starnn_dnnl_probe_layout(&key, 1, 0, starnn_dnnl_pack_layout, L, NULL) &&
	    (L->pair || g->o % L->ob || g->c % L->ib))
		memset(L, 0, sizeof *L);
	return L->ob != 0;
}

int starnn_conv2d_dnnl_pack(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g, starnn_dtype dt,
                            const struct starnn_conv2d_routes *r, size_t lda, const void *w, size_t ldw, size_t ldout,
                            float beta, void *packed, size_t bytes)
{
	char shape[160];
	if (!pack_pass_ok(pass) || (dt != STARNN_FP32 && dt != STARNN_BF16))
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): weights are packed for the forward and backward-data "
		                                   "passes of fp32 and bf16 convolutions only");
	struct dnnl_thread *t = starnn_dnnl_thread();
	if (!t)
		return STARNN_ENOMEM;
	struct dnnl_conv key = starnn_dnnl_key(0, (int)pass, dt, g, r, lda, ldw, pass == STARNN_CONV2D_FWD, beta, ldout);
	struct dnnl_conv *e;
	STARNN_CHECK(starnn_dnnl_entry(t, &key, &e));
	const dnnl_memory_desc_t *md = NULL;
	if (!e->re_b || !e->ib || dnnl_memory_get_memory_desc(e->ib, &md) != dnnl_success || !md)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): the primitive takes the weights as they are: nothing "
		                                   "to pack (%s)",
		                    starnn_dnnl_describe(shape, sizeof shape, e));
	size_t off = pack_data_offset(packed);
	if (off + md_bytes(md) > bytes)
		return starnn_error(STARNN_EINVAL, "conv2d (oneDNN): %zu bytes cannot hold the packed weights (%zu; %s)",
		                    bytes, off + md_bytes(md), starnn_dnnl_describe(shape, sizeof shape, e));
	memcpy(packed, md, sizeof *md);
	return starnn_dnnl_run_reorder(t, e, e->re_b, e->scratch[2], e->ub, w, e->ib, (char *)packed + off,
	                               "weight packing");
}

/* (where the primitive's layout is the copy's, a blocked layout that
 * runtime/base/types.h describes, its output-channel blocks outermost, so
 * that rows row0 .. row0 + o are contiguous blocks, row0 is on a block
 * boundary and the part ends on one or at the copy's last row) */
void *starnn_dnnl_sliced_weights(const struct dnnl_conv *e, const struct packed_ref *r)
{
	const struct starnn_blocked_weights *L = r->buf;
	const dnnl_memory_desc_t *md = NULL;
	struct starnn_blocked_weights le;
	if (!e->ib || dnnl_memory_get_memory_desc(e->ib, &md) != dnnl_success || !md)
		return NULL;
	if (e->kind && !e->zb) /* (a transposed convolution's [o, c, 2, 2]: a layout of the rows c) */
		starnn_dnnl_deconv_layout(md, &le);
	else
		starnn_dnnl_pack_layout(md, &le);
	le.trans = e->kind && e->zb; /* (its forward's 1x1 weights [4o, c]: of the transpose) */
	if (!le.ob || le.ob != L->ob || le.ib != L->ib || le.i_inner != L->i_inner || le.pair != L->pair ||
	    le.trans != L->trans || le.i != L->i ||
	    le.taps != L->taps || r->row0 % L->ob || r->row0 + le.o > L->o ||
	    (le.o % L->ob && r->row0 + le.o != L->o))
		return NULL;
	const size_t ibs = (L->i + L->ib - 1) / L->ib; /* (elements of L's size: bf16 in pairs too) */
	return (char *)starnn_blocked_weights_data(L, (void *)r->buf) +
	       r->row0 / L->ob * ibs * L->taps * L->ob * L->ib * starnn_blocked_weights_es(L);
}

/* Whether the fp32 primitive of a pass (this thread's, for these
 * arguments) reads the weights of r as they are. */
static int reads_as_is(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                       const struct starnn_conv2d_routes *r, size_t lda, size_t ldw, size_t ldout, float beta,
                       const struct packed_ref *p)
{
	if (!p->buf || !pack_pass_ok(pass) || !g->n || !g->c || !g->o || !g->h || !g->w ||
	    starnn_conv2d_1x1_gemm(g, STARNN_FP32, r) ||
	    (pass == STARNN_CONV2D_FWD && starnn_conv2d_nchw_in_direct(g, STARNN_FP32, r)))
		return 0;
	struct dnnl_thread *t = starnn_dnnl_thread();
	if (!t)
		return 0;
	struct dnnl_conv key =
		starnn_dnnl_key(0, (int)pass, STARNN_FP32, g, r, lda, ldw, pass == STARNN_CONV2D_FWD, beta, ldout);
	struct dnnl_conv *e;
	if (starnn_dnnl_entry(t, &key, &e) < 0)
		return 0; /* (the pass itself reports it) */
	return (p->sliced ? starnn_dnnl_sliced_weights(e, p) : starnn_dnnl_packed_weights(e, p->buf)) != NULL;
}

int starnn_conv2d_dnnl_packed_ok(enum starnn_conv2d_pass pass, const struct starnn_conv2d_geom *g,
                                 const struct starnn_conv2d_routes *r, size_t lda, size_t ldw, size_t ldout,
                                 float beta, const void *packed)
{
	const struct packed_ref p = {packed, 0, 0};
	return reads_as_is(pass, g, r, lda, ldw, ldout, beta, &p);
}

int starnn_conv2d_dnnl_sliced_ok(const struct starnn_conv2d_geom *g, const struct starnn_conv2d_routes *r, size_t ldx,
                                 size_t ldw, size_t ldy, const void *whole, size_t row0)
{
	const struct packed_ref p = {whole, row0, 1};
	return reads_as_is(STARNN_CONV2D_FWD, g, r, ldx, ldw, ldy, 0.0f, &p);
}

/* Whether oneDNN runs bf16 convolutions on this processor. oneDNN
 * implements bf16 only on ISAs that have it (AVX-512 and newer: emulated on
 * plain AVX-512, native with AVX512-BF16 / AMX); on AVX2-only processors
 * (AMD Zen 3, older Intel) every bf16 primitive is "unimplemented". Probed
 * once with the real kernels on a tiny shape (all six passes), so the
 * answer is what the library does here, not a guess from CPUID. */
static int bf16_ok;
static pthread_once_t bf16_once = PTHREAD_ONCE_INIT;

static void bf16_probe(void)
{
	enum { N = 1, C = 2, O = 2, H = 4, W = 4 };
	uint16_t x[N * C * H * W] = {0}, w[O * C * 9] = {0}, y[N * O * H * W], wt[C * O * 4] = {0};
	uint16_t yt[N * O * 4 * H * W] = {0}, dx[N * C * H * W];
	float b[O] = {0}, dw[O * C * 9], dwt[C * O * 4];
	struct starnn_conv2d_geom g = {N, C, O, H, W, 3, 1, 1, 0, 0, 0};
	/* (the routes are all auto: none of them concerns bf16 here) */
	bf16_ok = starnn_dnnl_run(0, STARNN_CONV2D_FWD, STARNN_BF16, &g, NULL, x, C * H * W, w, C * 9, NULL, b, 0.0f, y,
	                          O * H * W) == 0 &&
	          starnn_dnnl_run(0, STARNN_CONV2D_BWD_DATA, STARNN_BF16, &g, NULL, y, O * H * W, w, C * 9, NULL, NULL, 0.0f,
	                          dx, C * H * W) == 0 &&
	          starnn_dnnl_run(0, STARNN_CONV2D_BWD_WEIGHT, STARNN_BF16, &g, NULL, x, C * H * W, y, O * H * W, NULL, NULL,
	                          0.0f, dw, C * 9) == 0;
	g.k = 2;
	bf16_ok = bf16_ok &&
	          starnn_dnnl_run(1, STARNN_CONV2D_FWD, STARNN_BF16, &g, NULL, x, C * H * W, wt, O * 4, NULL, b, 0.0f, yt,
	                          O * 4 * H * W) == 0 &&
	          starnn_dnnl_run(1, STARNN_CONV2D_BWD_DATA, STARNN_BF16, &g, NULL, yt, O * 4 * H * W, wt, O * 4, NULL, NULL,
	                          0.0f, dx, C * H * W) == 0 &&
	          starnn_dnnl_run(1, STARNN_CONV2D_BWD_WEIGHT, STARNN_BF16, &g, NULL, x, C * H * W, yt, O * 4 * H * W, NULL,
	                          NULL, 0.0f, dwt, O * 4) == 0;
}

int starnn_conv2d_dnnl_bf16(void)
{
	pthread_once(&bf16_once, bf16_probe);
	return bf16_ok;
}

/* The activation layout oneDNN's forward convolution picks for itself
 * (format "any") on a mid-sized UNet layer (64 -> 64 channels, 32x32, 3x3):
 * nChw16c on AVX-512, nChw8c on AVX2, NHWC for bf16 on AMX
 * (STARNN_CONV2D_NHWC), else 0. Probed once per dtype (fp32, bf16). */
static int block_of_dt[2] = {INT_MIN, INT_MIN};
static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;

static int block_probe(dnnl_data_type_t dt)
{
	if (starnn_dnnl_thread() == NULL) /* creates the engine */
		return 0;
	dnnl_dims_t xd = {1, 64, 32, 32}, wd = {64, 64, 3, 3}, stride = {1, 1}, pad = {1, 1};
	dnnl_memory_desc_t ax, aw, ay, b8, b16, nhwc;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd = NULL;
	int block = 0;
	if (dnnl_memory_desc_init_by_tag(&ax, 4, xd, dt, dnnl_format_tag_any) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&aw, 4, wd, dt, dnnl_format_tag_any) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&ay, 4, xd, dt, dnnl_format_tag_any) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&b8, 4, xd, dt, dnnl_nChw8c) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&b16, 4, xd, dt, dnnl_nChw16c) != dnnl_success ||
	    dnnl_memory_desc_init_by_tag(&nhwc, 4, xd, dt, dnnl_acdb) != dnnl_success ||
	    dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct, &ax, &aw, NULL, &ay,
	                                       stride, pad, pad) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &cd, NULL, starnn_dnnl_engine, NULL) != dnnl_success)
		return 0;
	const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0),
	                         *dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
	if (src && dst && dnnl_memory_desc_equal(src, &b16) && dnnl_memory_desc_equal(dst, &b16))
		block = 16;
	else if (src && dst && dnnl_memory_desc_equal(src, &b8) && dnnl_memory_desc_equal(dst, &b8))
		block = 8;
	else if (src && dst && dnnl_memory_desc_equal(src, &nhwc) && dnnl_memory_desc_equal(dst, &nhwc))
		block = STARNN_CONV2D_NHWC;
	dnnl_primitive_desc_destroy(pd);
	return block;
}

int starnn_conv2d_dnnl_block(starnn_dtype dt)
{
	int i = dt == STARNN_BF16 ? 1 : 0;
	/* probed once under the lock; read without it afterwards (the tasks'
	 * route choices ask at every call) */
	int b = __atomic_load_n(&block_of_dt[i], __ATOMIC_ACQUIRE);
	if (b != INT_MIN)
		return b;
	pthread_mutex_lock(&block_lock);
	if (block_of_dt[i] == INT_MIN)
		__atomic_store_n(&block_of_dt[i], block_probe(dnnl_dt(dt)), __ATOMIC_RELEASE);
	b = block_of_dt[i];
	pthread_mutex_unlock(&block_lock);
	return b;
}
