/* runtime/dist: the all-reduce and the broadcast inside the task graph,
 * run by tests/runtime/allreduce.sh under mpirun with 2, 3 and 4 ranks
 * (alone it is one rank and checks that the collectives leave tensors
 * as they are). Every rank knows every rank's values (a function of rank
 * and index), so each checks on its own:
 *   - bit for bit against the binomial tree of dist.h evaluated on the
 *     host in fp32 (the order is fixed, so no timing can change a bit);
 *   - against the double sum within the bound of that sum's rounding
 *     ((N - 1) u sum |x|);
 * over odd sizes, 1-D / 2-D / 4-D shapes and chunk sizes that cut the
 * tensors at odd places (1 element per chunk row, chunks larger than the
 * tensor), several tensors reduced before any is read, the same tensor
 * reduced twice in a row, and a broadcast of rank 0's values.
 * `allreduce --has-mpi` exits 0 when built with StarPU-MPI, else 77. */
#include <config.h>

#include "codelets/wire.h"
#include "runtime/train/dist.h"
#include "tests/testlib.h"

static float value(int rank, size_t i, int round)
{
	/* Magnitudes spread over 2^-8 .. 2^8 with both signs: sums round. */
	uint64_t z = (uint64_t)rank * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull + (uint64_t)round * 0x94d049bb133111ebull;
	z ^= z >> 29;
	z *= 0xbf58476d1ce4e5b9ull;
	z ^= z >> 32;
	float m = (float)(z & 0xffffff) / 16777216.0f + 0.5f;
	int e = (int)((z >> 24) % 17) - 8;
	return ((z >> 40) & 1 ? -1.0f : 1.0f) * ldexpf(m, e);
}

/* The tree of dist.h on the host: rank i += rank i + stride. */
static float tree(int nranks, size_t i, int round, double *exact, double *abs)
{
	float s[64];
	*exact = 0, *abs = 0;
	for (int r = 0; r < nranks; r++) {
		s[r] = value(r, i, round);
		*exact += s[r];
		*abs += fabs(s[r]);
	}
	for (int stride = 1; stride < nranks; stride *= 2)
		for (int r = 0; r + stride < nranks; r += 2 * stride)
			s[r] = (float)((double)s[r] + (double)s[r + stride]);
	return s[0];
}

/* D(C(v)): v through wire format f and back (the CPU kernels, tested on
 * their own in tests/codelets/wire). */
static void through(starnn_wire_format f, size_t n, float *v)
{
	uint8_t *w = malloc(starnn_wire_bytes(f, n) + 1);
	starnn_compress_cpu(f, 1, n, v, n, w);
	starnn_decompress_cpu(f, 1, n, w, v, n);
	free(w);
}

/* The compressed tree of dist.h on the host, whole tensor (one chunk):
 * rank i's partial sum += D(C(rank i + stride's)), then D(C(rank 0's)). */
static void tree_wire(starnn_wire_format f, int nranks, size_t n, int round, float *out)
{
	float *s = malloc(sizeof *s * n * (size_t)nranks);
	for (int r = 0; r < nranks; r++)
		for (size_t i = 0; i < n; i++)
			s[(size_t)r * n + i] = value(r, i, round);
	for (int stride = 1; stride < nranks; stride *= 2)
		for (int r = 0; r + stride < nranks; r += 2 * stride) {
			float *child = s + (size_t)(r + stride) * n;
			through(f, n, child);
			for (size_t i = 0; i < n; i++)
				s[(size_t)r * n + i] = (float)((double)s[(size_t)r * n + i] + (double)child[i]);
		}
	memcpy(out, s, sizeof *s * n);
	through(f, n, out);
	free(s);
}

/* starnn_dist_allreduce_wire in every format: whole tensors against the
 * host tree bit for bit; cut in chunks, every rank holds the same bits
 * (rank 0's, broadcast) and the elementwise formats the same as whole. */
static void test_wire(int rank, int n)
{
	const starnn_wire_format fmts[] = {STARNN_WIRE_BF16, STARNN_WIRE_FP16, STARNN_WIRE_TRUNC16, STARNN_WIRE_TRUNC24,
	                                   STARNN_WIRE_RNE24, STARNN_WIRE_INT8, STARNN_WIRE_FP8};
	const int64_t sizes[] = {1, 255, 257, 3000};
	for (size_t k = 0; k < sizeof fmts / sizeof *fmts; k++)
		for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
			for (int chunked = 0; chunked < 2; chunked++) {
				starnn_wire_format f = fmts[k];
				size_t m = (size_t)sizes[z];
				int round = 5000 + (int)(k * 10 + z);
				starnn_dist_set_chunk(chunked ? 100 : (size_t)1 << 30);
				starnn_tensor *t;
				TEST_OK(starnn_tensor_create(&t, "arw", STARNN_FP32, 1, &sizes[z]));
				float *x = malloc(m * sizeof *x), *want = malloc(m * sizeof *want);
				for (size_t i = 0; i < m; i++)
					x[i] = value(rank, i, round);
				TEST_OK(starnn_tensor_write(t, x));
				TEST_OK(starnn_dist_allreduce_wire(t, f));
				TEST_OK(starnn_tensor_read(t, x));
				int block = f == STARNN_WIRE_INT8 || f == STARNN_WIRE_FP8;
				size_t bad = 0;
				if (n == 1) { /* no rank edge: left as it is */
					for (size_t i = 0; i < m; i++)
						bad += x[i] != value(rank, i, round);
				} else if (!chunked || !block) {
					tree_wire(f, n, m, round, want);
					for (size_t i = 0; i < m; i++)
						bad += memcmp(&x[i], &want[i], sizeof *x) != 0;
				} else { /* chunked block format: the same on every rank */
					TEST_OK(starnn_tensor_write(t, x));
					TEST_OK(starnn_dist_broadcast(t));
					TEST_OK(starnn_tensor_read(t, want));
					for (size_t i = 0; i < m; i++)
						bad += memcmp(&x[i], &want[i], sizeof *x) != 0;
				}
				TEST_ASSERT(bad == 0, "rank %d/%d: all-reduce in %s, %zu values%s: %zu wrong", rank, n,
				            starnn_wire_name(f), m, chunked ? " in chunks of 100" : "", bad);
				free(x), free(want);
				starnn_tensor_destroy(t);
			}
	starnn_dist_set_chunk(0);
}

struct shape {
	int ndim;
	int64_t dims[4];
};

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--has-mpi") == 0) {
#ifdef STARNN_USE_MPI
		return 0;
#else
		return TEST_SKIP;
#endif
	}
	struct starnn_config cfg;
	starnn_config_init(&cfg);
	cfg.quiet = 1;
	cfg.config_hash = starnn_launch_hash_args(argc, argv);
	if (starnn_init(&cfg) < 0) {
		fprintf(stderr, "starnn_init: %s\n", starnn_last_error());
		return 1;
	}
	int rank = starnn_launch_rank(), n = starnn_launch_size();
	printf("rank %d of %d%s%s\n", rank, n, starnn_launch_mpi() ? ": " : "", starnn_launch_summary());
	const struct shape shapes[] = {
		{1, {1}},       {1, {7}},        {1, {1000}},        {2, {3, 5}},
		{2, {1, 129}},  {2, {257, 3}},   {4, {5, 3, 3, 3}},  {4, {17, 4, 7, 9}},
	};
	const size_t chunks[] = {0, 1, 3, 64, 1000};
	int nshapes = (int)(sizeof shapes / sizeof *shapes), round = 0;
	for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
		starnn_dist_set_chunk(chunks[c]);
		starnn_tensor *t[16];
		/* All shapes reduced before any is read; the last one twice. */
		for (int k = 0; k < nshapes; k++) {
			TEST_OK(starnn_tensor_create(&t[k], "ar", STARNN_FP32, shapes[k].ndim, shapes[k].dims));
			size_t numel = starnn_tensor_numel(t[k]);
			float *x = malloc(numel * sizeof *x);
			for (size_t i = 0; i < numel; i++)
				x[i] = value(rank, i, round + k);
			TEST_OK(starnn_tensor_write(t[k], x));
			free(x);
			TEST_OK(starnn_dist_allreduce(t[k]));
		}
		for (int k = 0; k < nshapes; k++) {
			size_t numel = starnn_tensor_numel(t[k]);
			float *y = malloc(numel * sizeof *y);
			TEST_OK(starnn_tensor_read(t[k], y));
			size_t bad_bits = 0, bad_bound = 0;
			for (size_t i = 0; i < numel; i++) {
				double exact, abs;
				float want = tree(n, i, round + k, &exact, &abs);
				if (memcmp(&want, &y[i], sizeof want) != 0)
					bad_bits++;
				if (fabs((double)y[i] - exact) > (n - 1) * ldexp(1.0, -24) * abs * 1.0001)
					bad_bound++;
			}
			TEST_ASSERT(bad_bits == 0 && bad_bound == 0,
			            "rank %d/%d chunk %zu shape %d (%zu values): %zu differ from the fp32 tree, %zu beyond the "
			            "rounding bound of the double sum",
			            rank, n, chunks[c], k, numel, bad_bits, bad_bound);
			free(y);
		}
		/* Twice in a row on the same tensor: the second sum is N times the first. */
		starnn_tensor *last = t[nshapes - 1];
		size_t numel = starnn_tensor_numel(last);
		float *y0 = malloc(numel * sizeof *y0), *y1 = malloc(numel * sizeof *y1);
		TEST_OK(starnn_tensor_read(last, y0));
		TEST_OK(starnn_dist_allreduce(last));
		TEST_OK(starnn_dist_allreduce(last));
		TEST_OK(starnn_tensor_read(last, y1));
		size_t bad = 0;
		for (size_t i = 0; i < numel; i++) {
			/* Every rank holds y0: the tree adds equal values, exact in
			 * powers of two; for 3 ranks (y0 + y0) + y0 is one rounding. */
			float a = y0[i];
			float s[64] = {0};
			for (int rep = 0; rep < 2; rep++) {
				for (int r = 0; r < n; r++)
					s[r] = a;
				for (int stride = 1; stride < n; stride *= 2)
					for (int r = 0; r + stride < n; r += 2 * stride)
						s[r] = (float)((double)s[r] + (double)s[r + stride]);
				a = s[0];
			}
			bad += memcmp(&a, &y1[i], sizeof a) != 0;
		}
		TEST_ASSERT(bad == 0, "rank %d/%d chunk %zu: %zu values wrong after two more all-reduces", rank, n,
		            chunks[c], bad);
		free(y0), free(y1);
		/* Broadcast: rank 0's values everywhere. */
		for (int k = 0; k < nshapes; k++) {
			size_t m = starnn_tensor_numel(t[k]);
			float *x = malloc(m * sizeof *x);
			for (size_t i = 0; i < m; i++)
				x[i] = value(rank, i, 1000 + k);
			TEST_OK(starnn_tensor_write(t[k], x));
			TEST_OK(starnn_dist_broadcast(t[k]));
			TEST_OK(starnn_tensor_read(t[k], x));
			size_t wrong = 0;
			for (size_t i = 0; i < m; i++) {
				float want = value(0, i, 1000 + k);
				wrong += memcmp(&want, &x[i], sizeof want) != 0;
			}
			TEST_ASSERT(wrong == 0, "rank %d/%d: broadcast shape %d: %zu values are not rank 0's", rank, n, k, wrong);
			free(x);
		}
		for (int k = 0; k < nshapes; k++)
			starnn_tensor_destroy(t[k]);
		round += nshapes;
	}
	test_wire(rank, n);
	/* Host doubles (3 values, odd): every rank gets the sum over ranks. */
	for (int len = 1; len <= 3; len += 2) {
		double v[3], want[3] = {0};
		for (int i = 0; i < len; i++) {
			v[i] = 1e9 + rank * 0.25 + i;
			for (int r = 0; r < n; r++)
				want[i] += 1e9 + r * 0.25 + i;
		}
		TEST_OK(starnn_dist_sum_doubles(v, len));
		for (int i = 0; i < len; i++)
			TEST_ASSERT(v[i] == want[i], "rank %d/%d: dist_sum_doubles[%d] of %d = %.17g, expected %.17g", rank, n, i,
			            len, v[i], want[i]);
	}
	int rc = starnn_shutdown();
	if (rc < 0) {
		fprintf(stderr, "starnn_shutdown: %s\n", starnn_last_error());
		return 1;
	}
	printf("rank %d of %d: %d checks, %d failures\n", rank, n, test_checks, test_failures);
	return test_failures ? 1 : 0;
}
