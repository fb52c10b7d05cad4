/* The UNet task graph (models/unet_model.c):
 *   - parameter count 16556044 for the reference (depth 4, f 32, 13 -> 12),
 *     from the configuration and in unet_print_config's last line; a built
 *     model's count equals the configuration's;
 *   - bad configurations give STARNN_EINVAL;
 *   - gradients of tiny UNets (depth 1: f 2, 8x8; depth 2: f 2, 16x16;
 *     batch 2 in 2 micro-batches) for every parameter tensor (conv weight /
 *     bias, BN gamma / beta, transposed conv weight / bias, output conv):
 *     against PyTorch float64 autograd of the same network in each
 *     convention, keras and starnn-v1 (committed reference, 8 elements per
 *     tensor, 2e-4 relative + 2e-6), and against
 *     central finite differences (3 elements per tensor, tolerance below);
 *   - micro-batch invariance: M = 1, 2 and batch give the same losses and
 *     weights over 3 Adam steps;
 *   - SGD with lr 0 leaves the parameters unchanged;
 *   - training on a fixed tiny batch reduces the loss;
 *   - evaluation forward uses the running statistics (fresh model: running
 *     mean 0, var 1, so eval output differs from the training output). */
#include <config.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/unet_model.h"
#include "tests/testlib.h"

/* ------------------------------------------------------------ helpers */

/* A configuration of the fields the tests set (the others zero: fp32). */
static struct unet_config config(int depth, int f, int in, int out, int size, int batch, int micro)
{
	return (struct unet_config){.depth = depth, .filters = f, .in_frames = in, .out_frames = out, .size = size,
	                            .batch = batch, .micro = micro};
}

static unet *make_in(int convention, int depth, int f, int size, int batch, int micro, enum unet_optimizer kind,
                     float lr, uint64_t seed)
{
	struct unet_config cfg = config(depth, f, 3, 2, size, batch, micro);
	cfg.convention = convention;
	struct unet_optim o;
	unet_optim_defaults(&o);
	o.kind = kind;
	o.lr = lr;
	unet *m;
	TEST_OK(unet_create(&m, &cfg, &o, seed));
	return m;
}

/* A model of the default convention (keras). */
static unet *make(int depth, int f, int size, int batch, int micro, enum unet_optimizer kind, float lr,
                  uint64_t seed)
{
	return make_in(UNET_KERAS, depth, f, size, batch, micro, kind, lr, seed);
}

/* Deterministic input and target of the model's batch. */
static void fill_batch(unet *m, uint64_t seed, float **x_out, float **y_out)
{
	test_seed(seed);
	size_t nx = starnn_tensor_numel(unet_input(m)), ny = starnn_tensor_numel(unet_target(m));
	float *x = test_random(nx, -1.5f, 1.5f), *y = test_random(ny, -1.0f, 1.0f);
	TEST_OK(starnn_tensor_write_f32(unet_input(m), x));
	TEST_OK(starnn_tensor_write_f32(unet_target(m), y));
	if (x_out)
		*x_out = x;
	else
		free(x);
	if (y_out)
		*y_out = y;
	else
		free(y);
}

/* ------------------------------------------------------------ counts */

static void test_counts(void)
{
	struct unet_config ref = config(4, 32, 13, 12, 384, 8, 2);
	int64_t n = unet_count_parameters(&ref);
	TEST_ASSERT(n == 16556044, "reference UNet: %lld parameters, expected 16556044", (long long)n);

	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	TEST_ASSERT(f != NULL, "open_memstream");
	if (f) {
		TEST_OK(unet_print_config(&ref, f));
		fclose(f);
		const char *last = text;
		for (const char *c = text; *c; c++)
			if (*c == '\n' && c[1])
				last = c + 1;
		TEST_ASSERT(strcmp(last, "parameters: 16556044\n") == 0, "last line of unet_print: '%s'", last);
		free(text);
	}

	/* Convolution FLOPs, counted by hand for depth 1, f 2, 1 -> 1 frames at
	 * 4x4 (multiply-adds): enc0 conv1 2*1*9*16 = 288, conv2 2*2*9*16 = 576,
	 * centre (64 channels at 2x2) 64*2*9*4 = 4608 and 64*64*9*4 = 147456,
	 * up 2 channels * 16 pixels * 64 = 2048, dec0 2*4*9*16 = 1152 and 576,
	 * out 1*2*16 = 32: 156736; training 3x that but the first layer's data
	 * gradient. */
	struct unet_config tiny = config(1, 2, 1, 1, 4, 1, 1);
	double fwd = 0, train = 0;
	TEST_OK(unet_count_flops(&tiny, &fwd, &train));
	TEST_ASSERT(fwd == 2 * 156736.0 && train == 3 * 2 * 156736.0 - 2 * 288.0,
	            "tiny UNet: forward %.0f FLOPs (expected %.0f), training %.0f (expected %.0f)", fwd, 2 * 156736.0,
	            train, 3 * 2 * 156736.0 - 2 * 288.0);
	struct unet_config bad_depth = config(0, 2, 1, 1, 4, 1, 1);
	TEST_ASSERT(unet_count_flops(&bad_depth, &fwd, &train) == STARNN_EINVAL,
	            "a bad configuration's FLOPs were counted");

	/* Bad configurations. */
	struct unet_config bad[] = {
		config(0, 32, 13, 12, 64, 2, 1),  config(6, 32, 13, 12, 128, 2, 1), config(2, 0, 13, 12, 64, 2, 1),
		config(2, 8, 13, 12, 66, 2, 1),   config(2, 8, 0, 12, 64, 2, 1),    config(2, 8, 13, 12, 64, 2, 3),
		config(2, 8, 13, 12, 64, 0, 1),   config(2, 8, 13, 12, 2, 2, 1),
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		unet *m = (unet *)1;
		int rc = unet_create(&m, &bad[i], NULL, 1);
		TEST_ASSERT(rc == STARNN_EINVAL && m == NULL, "bad configuration %zu accepted (rc %d)", i, rc);
	}

	/* Depth 1..3 models: the built model's count is the configuration's. */
	for (int depth = 1; depth <= 3; depth++) {
		unet *m = make(depth, 2, 16, 2, 2, UNET_ADAM, 1e-3f, 1);
		struct unet_config c = *unet_get_config(m);
		TEST_ASSERT(unet_parameter_count(m) == unet_count_parameters(&c), "depth %d: model %lld, config %lld",
		            depth, (long long)unet_parameter_count(m), (long long)unet_count_parameters(&c));
		int nt;
		const struct unet_tensor_ref *refs = unet_tensors(m, &nt);
		int64_t sum = 0;
		int adam_slots = 0;
		for (int i = 0; i < nt; i++) {
			if (refs[i].is_parameter)
				sum += (int64_t)starnn_tensor_numel(refs[i].tensor);
			if (strstr(refs[i].path, "optimizer/") == refs[i].path)
				adam_slots++;
		}
		TEST_ASSERT(sum == unet_parameter_count(m), "depth %d: tensors hold %lld parameters", depth, (long long)sum);
		int nparams = 0;
		for (int i = 0; i < nt; i++)
			nparams += refs[i].is_parameter;
		TEST_ASSERT(adam_slots == 2 * nparams, "depth %d: %d Adam slots for %d parameters", depth, adam_slots,
		            nparams);
		unet_destroy(m);
	}
}

/* ------------------------------------------------------------ gradients */

struct fd_ctx {
	unet *m;
	starnn_tensor *t;
	const float *y;
	size_t ny;
};

/* The training loss (batch statistics), summed in double from the
 * prediction. */
static double loss_of(const float *w, void *ctx_)
{
	struct fd_ctx *c = ctx_;
	TEST_OK(starnn_tensor_write_f32(c->t, w));
	TEST_OK(unet_loss_step(c->m, 1));
	float *pred = test_read(unet_prediction(c->m));
	double s = 0;
	for (size_t i = 0; i < c->ny; i++) {
		double d = (double)pred[i] - (double)c->y[i];
		s += d * d;
	}
	free(pred);
	return s / (double)c->ny;
}

/* Writes the model's parameters, their gradients, x and y as raw fp32
 * files DIR/<convention>.d<depth>.<path with '.'>.bin (for
 * tests/models/unet_reference.py). */
static void dump_tensor(const char *dir, const char *conv, int depth, const char *path, const char *suffix,
                        starnn_tensor *t)
{
	char file[512];
	snprintf(file, sizeof file, "%s/%s.d%d.%s%s.bin", dir, conv, depth, path, suffix);
	for (char *c = file + strlen(dir) + 1; *c; c++)
		if (*c == '/')
			*c = '.';
	float *v = test_read(t);
	FILE *f = fopen(file, "wb");
	TEST_ASSERT(f != NULL, "cannot write %s", file);
	if (f) {
		fwrite(v, sizeof *v, starnn_tensor_numel(t), f);
		fclose(f);
	}
	free(v);
}

static void dump(unet *m, const char *dir, const char *conv, int depth)
{
	int nt;
	const struct unet_tensor_ref *refs = unet_tensors(m, &nt);
	for (int i = 0; i < nt; i++)
		if (refs[i].is_parameter) {
			dump_tensor(dir, conv, depth, refs[i].path, "", refs[i].tensor);
			dump_tensor(dir, conv, depth, refs[i].path, ".grad", unet_gradient(m, i));
		}
	dump_tensor(dir, conv, depth, "x", "", unet_input(m));
	dump_tensor(dir, conv, depth, "y", "", unet_target(m));
	dump_tensor(dir, conv, depth, "pred", "", unet_prediction(m));
}

/* The gradients of the tiny UNets at their initialisation against PyTorch
 * (float64 autograd of the same network, the same weights and data), in
 * each convention (concatenation order and BatchNorm eps):
 * tests/models/unet_model.ref holds per convention and depth the loss and 8
 * elements of every parameter's gradient, written by
 * tests/models/unet_reference.py from this test's UNET_DUMP output.
 * Tolerance: 2e-4 relative + 2e-6 absolute (fp32 against float64: the
 * largest difference seen is 3e-6 relative). */
static void test_reference(int convention, int depth, int f, int size)
{
	const char *conv = unet_convention_name(convention);
	unet *m = make_in(convention, depth, f, size, 2, 2, UNET_SGD, 0.0f, 7 + (uint64_t)depth);
	fill_batch(m, 11, NULL, NULL);
	TEST_OK(unet_gradient_step(m));
	double loss;
	TEST_OK(unet_read_loss(m, &loss));
	if (getenv("UNET_DUMP"))
		dump(m, getenv("UNET_DUMP"), conv, depth);
	const char *file = STARNN_SRCDIR "/tests/models/unet_model.ref";
	FILE *fh = fopen(file, "r");
	TEST_ASSERT(fh != NULL, "cannot open %s", file);
	if (!fh) {
		unet_destroy(m);
		return;
	}
	int nt;
	const struct unet_tensor_ref *refs = unet_tensors(m, &nt);
	float *grads[256] = {0};
	char line[512], path[128], lc[32];
	int d, checked = 0, got_loss = 0;
	long k;
	double v, worst = 0;
	while (fgets(line, sizeof line, fh)) {
		if (sscanf(line, "%31s depth %d loss %lf", lc, &d, &v) == 3) {
			if (d == depth && !strcmp(lc, conv)) {
				TEST_ASSERT(fabs(loss - v) <= 1e-6 * fabs(v), "%s depth %d: loss %.9g, PyTorch %.9g", conv, depth,
				            loss, v);
				got_loss = 1;
			}
			continue;
		}
		if (sscanf(line, "%31s %d %127s %ld %lf", lc, &d, path, &k, &v) != 5 || d != depth || strcmp(lc, conv))
			continue;
		int i = 0;
		while (i < nt && strcmp(refs[i].path, path) != 0)
			i++;
		TEST_ASSERT(i < nt && i < 256 && refs[i].is_parameter, "depth %d: no parameter %s", depth, path);
		if (i >= nt || i >= 256 || !refs[i].is_parameter)
			continue;
		if (!grads[i])
			grads[i] = test_read(unet_gradient(m, i));
		TEST_ASSERT(k >= 0 && (size_t)k < starnn_tensor_numel(refs[i].tensor), "%s: index %ld", path, k);
		if (k < 0 || (size_t)k >= starnn_tensor_numel(refs[i].tensor))
			continue;
		double an = grads[i][k], tol = 2e-4 * fabs(v) + 2e-6;
		TEST_ASSERT(fabs(an - v) <= tol, "depth %d: d loss / d %s[%ld]: %.9g, PyTorch %.9g", depth, path, k, an, v);
		worst = fmax(worst, fabs(an - v) / tol);
		checked++;
	}
	fclose(fh);
	TEST_ASSERT(got_loss && checked >= 100, "%s depth %d: only %d reference gradients in %s", conv, depth, checked,
	            file);
	printf("PyTorch reference, %s, depth %d: loss %.9f, %d gradient elements, worst error/tolerance %.3f\n", conv,
	       depth, loss, checked, worst);
	for (int i = 0; i < 256; i++)
		free(grads[i]);
	unet_destroy(m);
}

/* Gradients against central finite differences of the training loss (in
 * double from the prediction), on the same tiny UNets with the batch norms'
 * shifts and scales set so that few ReLU inputs sit near their kink (the
 * loss is only piecewise smooth: across a kink a difference quotient of
 * step h is off by O(1)). h = 3e-3; tolerance per element: 3% of it + 1% of
 * the tensor's largest gradient + fp32 noise of the loss (2e-7 loss / h) +
 * half the spread of the one-sided quotients. */
static void test_gradients(int depth, int f, int size)
{
	const int B = 2, M = 2, SAMPLES = 3;
	const double h = 3e-3;
	unet *m = make(depth, f, size, B, M, UNET_SGD, 0.0f, 7 + (uint64_t)depth);
	float *y;
	fill_batch(m, 11, NULL, &y);
	struct fd_ctx ctx = {m, NULL, y, starnn_tensor_numel(unet_target(m))};

	int nt;
	const struct unet_tensor_ref *refs = unet_tensors(m, &nt);
	/* Few ReLU inputs near their kink: BN shifts of about +BN_SHIFT (the
	 * ReLUs then pass most values), BN scales in [0.5, 1.5]. */
	const float shift = 2.0f;
	test_seed(99);
	for (int i = 0; i < nt; i++) {
		if (!refs[i].is_parameter || !strstr(refs[i].path, "/bn"))
			continue;
		size_t n = starnn_tensor_numel(refs[i].tensor);
		int is_gamma = strstr(refs[i].path, "/weight") != NULL;
		float *v = test_random(n, is_gamma ? 0.5f : shift - 0.25f, is_gamma ? 1.5f : shift + 0.25f);
		TEST_OK(starnn_tensor_write_f32(refs[i].tensor, v));
		free(v);
	}
	TEST_OK(unet_gradient_step(m));
	double loss;
	TEST_OK(unet_read_loss(m, &loss));
	double worst = 0, f0 = NAN;
	const char *worst_path = "";
	int checked = 0, kinked = 0;
	for (int i = 0; i < nt; i++) {
		if (!refs[i].is_parameter)
			continue;
		starnn_tensor *g = unet_gradient(m, i);
		TEST_ASSERT(g != NULL, "%s: no gradient", refs[i].path);
		if (!g)
			continue;
		size_t n = starnn_tensor_numel(refs[i].tensor);
		float *grad = test_read(g), *w = test_read(refs[i].tensor);
		double gmax = 0;
		for (size_t k = 0; k < n; k++)
			gmax = fmax(gmax, fabs(grad[k]));
		ctx.t = refs[i].tensor;
		if (isnan(f0)) {
			f0 = loss_of(w, &ctx);
			TEST_ASSERT(fabs(f0 - loss) <= 1e-6 * loss, "loss %.9g from the prediction, %.9g from the graph", f0,
			            loss);
		}
		for (int s = 0; s < SAMPLES; s++) {
			size_t k = (size_t)((s * 7919u + (unsigned)i * 104729u) % n);
			float xi = w[k], xp = (float)(xi + h), xm = (float)(xi - h);
			w[k] = xp;
			double fp = loss_of(w, &ctx);
			w[k] = xm;
			double fm = loss_of(w, &ctx);
			w[k] = xi;
			double fd = (fp - fm) / ((double)xp - (double)xm);
			double right = (fp - f0) / ((double)xp - xi), left = (f0 - fm) / ((double)xi - xm);
			double an = grad[k];
			/* The loss is only piecewise smooth (ReLU): a step of h can
			 * cross kinks, which shows as one-sided slopes that disagree;
			 * their spread is allowed on top of 3% of the element, 1% of
			 * the tensor's largest gradient (second-order error through
			 * batch norm) and the fp32 noise of the loss (~1e-7 / h). */
			double spread = fabs(right - left);
			double tol = 0.03 * fabs(an) + 0.01 * gmax + 2e-7 * loss / h + 0.5 * spread;
			double err = fabs(fd - an);
			kinked += spread > 0.1 * fabs(an) + 0.01 * gmax;
			TEST_ASSERT(err <= tol,
			            "depth %d: d loss / d %s[%zu]: analytic %.6g, finite differences %.6g "
			            "(one-sided %.6g, %.6g; tol %.3g)",
			            depth, refs[i].path, k, an, fd, left, right, tol);
			if (err / tol > worst)
				worst = err / tol, worst_path = refs[i].path;
			checked++;
		}
		TEST_OK(starnn_tensor_write_f32(refs[i].tensor, w)); /* restore */
		free(grad);
		free(w);
	}
	printf("gradients, depth %d f %d %dx%d, h %g: loss %.6f, %d elements checked (%d with one-sided quotients apart), "
	       "worst error/tolerance %.3f (%s)\n",
	       depth, f, size, size, h, loss, checked, kinked, worst, worst_path);
	free(y);
	unet_destroy(m);
}

/* ------------------------------------------------------------ micro-batches */

static void test_micro_invariance(void)
{
	const int B = 4, STEPS = 3;
	int micro[] = {1, 2, 4};
	double losses[3][STEPS];
	float *weights[3][256];
	int nt = 0;
	char **paths = NULL;
	for (int v = 0; v < 3; v++) {
		unet *m = make(2, 3, 16, B, micro[v], UNET_ADAM, 1e-3f, 5);
		fill_batch(m, 21, NULL, NULL);
		for (int s = 1; s <= STEPS; s++) {
			TEST_OK(unet_train_step(m, s));
			TEST_OK(unet_read_loss(m, &losses[v][s - 1]));
		}
		const struct unet_tensor_ref *refs = unet_tensors(m, &nt);
		TEST_ASSERT(nt <= 256, "too many tensors");
		if (!paths) {
			paths = calloc((size_t)nt, sizeof *paths);
			for (int i = 0; i < nt; i++)
				paths[i] = strdup(refs[i].path);
		}
		for (int i = 0; i < nt && i < 256; i++)
			weights[v][i] = test_read(refs[i].tensor);
		unet_destroy(m);
	}
	for (int v = 1; v < 3; v++) {
		for (int s = 0; s < STEPS; s++)
			TEST_ASSERT(fabs(losses[v][s] - losses[0][s]) <= 1e-5 * fabs(losses[0][s]),
			            "step %d: loss %.9g with %d micro-batches, %.9g with 1", s + 1, losses[v][s], micro[v],
			            losses[0][s]);
	}
	/* Weights after 3 Adam steps (lr 1e-3). Adam divides each gradient by
	 * its own magnitude, so an element whose gradient is near its rounding
	 * noise moves by up to lr in a direction that depends on the summation
	 * order: the biases of convolutions followed by a batch norm (true
	 * gradient 0), and the running means that see those biases, are
	 * compared with atol 3 lr and 0.3 lr; every other tensor must have at
	 * least 99.9% of its elements within rtol 1e-4 + atol 2e-6 and all
	 * within 0.1 lr. The optimizer state is not compared. */
	unet *shape = make(2, 3, 16, B, 1, UNET_ADAM, 1e-3f, 5);
	const struct unet_tensor_ref *refs = unet_tensors(shape, &nt);
	for (int i = 0; i < nt && i < 256; i++) {
		if (strncmp(paths[i], "optimizer/", 10) == 0)
			continue;
		size_t n = starnn_tensor_numel(refs[i].tensor);
		int pre_bn_bias = strstr(paths[i], "/bias") && (strstr(paths[i], "/conv") || strstr(paths[i], "/up/"));
		int running_mean = strstr(paths[i], "/running_mean") != NULL;
		for (int v = 1; v < 3; v++) {
			char what[160];
			snprintf(what, sizeof what, "%s with %d micro-batches vs 1", paths[i], micro[v]);
			if (pre_bn_bias || running_mean) {
				test_close(what, weights[v][i], weights[0][i], n, 1e-4f, pre_bn_bias ? 3e-3f : 3e-4f);
				continue;
			}
			size_t loose = 0;
			for (size_t k = 0; k < n; k++)
				loose += fabsf(weights[v][i][k] - weights[0][i][k]) > 2e-6f + 1e-4f * fabsf(weights[0][i][k]);
			TEST_ASSERT(loose <= n / 1000, "%s: %zu of %zu elements beyond rtol 1e-4, atol 2e-6", what, loose, n);
			test_close(what, weights[v][i], weights[0][i], n, 0.0f, 1e-4f);
		}
	}
	unet_destroy(shape);
	printf("micro-batches: losses %.6f %.6f %.6f (M = 1), the same within 1e-5 for M = 2, 4\n", losses[0][0],
	       losses[0][1], losses[0][2]);
	for (int v = 0; v < 3; v++)
		for (int i = 0; i < nt && i < 256; i++)
			free(weights[v][i]);
	for (int i = 0; i < nt; i++)
		free(paths[i]);
	free(paths);
}

/* ------------------------------------------------------------ optimizers */

static void test_sgd_lr0(void)
{
	unet *m = make(2, 2, 16, 2, 2, UNET_SGD, 0.0f, 3);
	fill_batch(m, 31, NULL, NULL);
	int nt;
	const struct unet_tensor_ref *refs = unet_tensors(m, &nt);
	float *before[256];
	for (int i = 0; i < nt && i < 256; i++)
		before[i] = test_read(refs[i].tensor);
	for (int s = 1; s <= 2; s++)
		TEST_OK(unet_train_step(m, s));
	int changed = 0, stats_changed = 0;
	for (int i = 0; i < nt && i < 256; i++) {
		float *after = test_read(refs[i].tensor);
		int differ = memcmp(after, before[i], starnn_tensor_numel(refs[i].tensor) * sizeof(float)) != 0;
		if (refs[i].is_parameter)
			changed += differ;
		else if (strstr(refs[i].path, "running_"))
			stats_changed += differ;
		free(after);
		free(before[i]);
	}
	TEST_ASSERT(changed == 0, "SGD lr 0 changed %d parameter tensors", changed);
	TEST_ASSERT(stats_changed > 0, "training steps did not update the running statistics");
	unet_destroy(m);
}

static void test_training(void)
{
	unet *m = make(2, 4, 16, 4, 2, UNET_ADAM, 3e-3f, 9);
	float *x, *y;
	fill_batch(m, 41, &x, &y);
	/* A learnable target: y = a smooth function of x (first input frame
	 * shifted), not noise. */
	const struct unet_config *c = unet_get_config(m);
	size_t hw = (size_t)c->size * c->size;
	for (int b = 0; b < c->batch; b++)
		for (int t = 0; t < c->out_frames; t++)
			for (size_t k = 0; k < hw; k++)
				y[((size_t)b * c->out_frames + t) * hw + k] =
				        0.5f * x[((size_t)b * c->in_frames + (t % c->in_frames)) * hw + (k + 1) % hw];
	TEST_OK(starnn_tensor_write_f32(unet_target(m), y));
	double first = 0, last = 0;
	for (int s = 1; s <= 40; s++) {
		TEST_OK(unet_train_step(m, s));
		if (s == 1)
			TEST_OK(unet_read_loss(m, &first));
	}
	TEST_OK(unet_read_loss(m, &last));
	TEST_ASSERT(last < 0.3 * first, "40 Adam steps on one batch: loss %.6f -> %.6f (expected < 30%%)", first, last);

	/* Evaluation uses the running statistics: its loss differs from the
	 * training-mode loss of the same weights; both are finite. */
	double train_loss, eval_loss;
	TEST_OK(unet_loss_step(m, 1));
	TEST_OK(unet_read_loss(m, &train_loss));
	TEST_OK(unet_eval_step(m));
	TEST_OK(unet_read_loss(m, &eval_loss));
	TEST_ASSERT(eval_loss != train_loss, "evaluation loss %.9g equals the training-mode loss", eval_loss);
	printf("training: loss %.6f -> %.6f in 40 steps; training-mode loss %.6f, evaluation loss %.6f\n", first, last,
	       train_loss, eval_loss);
	TEST_ASSERT(unet_train_step(m, 0) == STARNN_EINVAL, "step 0 accepted");
	free(x);
	free(y);
	unet_destroy(m);
}

int main(int argc, char **argv)
{
	(void)argc;
	starnn_blas_autoselect(argv);
	test_init();
	test_counts();
	for (int c = 0; c < UNET_NCONVENTIONS; c++) {
		test_reference(c, 1, 2, 8);
		test_reference(c, 2, 2, 16);
	}
	test_gradients(1, 2, 8);
	test_gradients(2, 2, 16);
	test_micro_invariance();
	test_sgd_lr0();
	test_training();
	return test_finish();
}
