/* The OpenCL backend's faults (docs/opencl.md), on one OpenCL worker (POCL's
 * CPU device will do: tests/testlib.h asks for it), each a clear error:
 *   - a program that does not build: through starnn_opencl_build (the
 *     message names the program, the device and the options and holds the
 *     compiler's log), and inside a task at the program's first use (the
 *     task does nothing, starnn_wait returns STARNN_EOPENCL with the log; a
 *     later task of that program says it again, without building again);
 *   - a launch that fails (an argument of the wrong size): a deferred
 *     STARNN_EOPENCL naming the operation, the kernel, the call and the
 *     argument;
 *   - a codelet without an OpenCL function on OpenCL workers: refused at
 *     submission, naming it;
 *   - data larger than the device's memory (STARPU_LIMIT_OPENCL_MEM=8,
 *     set here): a task restricted to the device is refused at submission
 *     with STARNN_ENOMEM (StarPU 1.3 would wait for room forever); one
 *     that may run on the CPU goes there and gives its result;
 *   - and a program that builds runs (the same path, a working kernel).
 * Skips (77) in a build without OpenCL or where no OpenCL worker starts.
 * The device asked for where none exists: tests/runtime/opencl.sh. */
#include "runtime/core/codelet.h"
#include "codelets/axpy.h"
#include "codelets/fill.h"
#include "tests/testlib.h"

#ifdef STARNN_USE_OPENCL
#include "codelets/opencl/common.h"

static const char broken_source[] = "kernel void k(global float *x, ulong n)\n"
                                    "{\n"
                                    "\tx[get_global_id(0)] = undeclared_name_of_this_test;\n"
                                    "}\n";
static const struct starnn_opencl_program broken = {"test_broken", broken_source};

/* x[i] *= 2 over rows x cols, and a launcher that gives n the wrong size. */
static const char good_source[] = "#pragma OPENCL FP_CONTRACT OFF\n"
                                  "kernel void twice(ulong cols, global float *x, ulong xo, ulong ldx)\n"
                                  "{\n"
                                  "\tconst ulong c = get_global_id(0), r = get_global_id(1);\n"
                                  "\tif (c < cols)\n"
                                  "\t\tx[xo + r * ldx + c] *= 2.0f;\n"
                                  "}\n";
static const struct starnn_opencl_program good = {"test_good", good_source};

static void run_program(void *buffers[], const struct starnn_opencl_program *p, int wrong_size)
{
	struct starnn_clmat x = starnn_cl_buffer(buffers, 0);
	struct starnn_opencl_ctx *ctx = starnn_opencl_ctx(p);
	if (!ctx)
		return;
	const cl_ulong c = x.cols, xo = x.off, ld = x.ld;
	const cl_uint c32 = (cl_uint)x.cols; /* a uint where the kernel has a ulong */
	if (wrong_size)
		STARNN_OPENCL_LAUNCHED(ctx, "test_twice",
		                       STARNN_CL_RUN_2D(ctx, "twice", x.rows, x.cols, STARNN_CL_ARG(c32), STARNN_CL_ARG(x.mem),
		                                        STARNN_CL_ARG(xo), STARNN_CL_ARG(ld)));
	else
		STARNN_OPENCL_LAUNCHED(ctx, "test_twice",
		                       STARNN_CL_RUN_2D(ctx, "twice", x.rows, x.cols, STARNN_CL_ARG(c), STARNN_CL_ARG(x.mem),
		                                        STARNN_CL_ARG(xo), STARNN_CL_ARG(ld)));
}

static void broken_opencl(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	run_program(buffers, &broken, 0);
}

static void good_opencl(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	run_program(buffers, &good, 0);
}

static void wrong_size_opencl(void *buffers[], void *cl_arg)
{
	(void)cl_arg;
	run_program(buffers, &good, 1);
}

static void cpu_only_cpu(void *buffers[], void *cl_arg)
{
	(void)buffers, (void)cl_arg;
}

static struct starpu_codelet cpu_only_cl = {.name = "test_cpu_only", .cpu_funcs = {cpu_only_cpu}, .nbuffers = 1,
                                            .modes = {STARPU_RW}};
static struct starpu_codelet broken_cl = {.name = "test_broken", STARNN_OPENCL_FUNCS(broken_opencl) .nbuffers = 1,
                                          .modes = {STARPU_RW}};
static struct starpu_codelet good_cl = {.name = "test_good", STARNN_OPENCL_FUNCS(good_opencl) .nbuffers = 1,
                                        .modes = {STARPU_RW}};
static struct starpu_codelet wrong_size_cl = {.name = "test_wrong_size", STARNN_OPENCL_FUNCS(wrong_size_opencl)
                                              .nbuffers = 1, .modes = {STARPU_RW}};

static int submit1(struct starpu_codelet *cl, starnn_tensor *t)
{
	struct starnn_task_desc d = {.cl = cl, .tensors = {t}};
	return starnn_submit(&d);
}

static int contains(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

static void build_error_api(void)
{
	int w = starpu_worker_get_by_type(STARPU_OPENCL_WORKER, 0);
	cl_program p = NULL;
	int rc = starnn_opencl_build("test_broken", broken_source, starpu_worker_get_devid(w), &p);
	const char *m = starnn_error_message();
	printf("starnn_opencl_build of a broken program: %s\n", m);
	TEST_ASSERT(rc == STARNN_EOPENCL && !p, "a broken program must not build: rc %d", rc);
	TEST_ASSERT(contains(m, "test_broken") && contains(m, "does not build") && contains(m, "-cl-std=CL1.2") &&
	                contains(m, "undeclared_name_of_this_test"),
	            "the build error names the program and the options and holds the compiler's log: %s", m);
	rc = starnn_opencl_build("test_good", good_source, starpu_worker_get_devid(w), &p);
	TEST_ASSERT(rc == 0 && p, "a good program builds: %s", starnn_error_message());
	if (p)
		clReleaseProgram(p);
	TEST_ASSERT(starnn_opencl_build("x", good_source, 99, &p) < 0 && !p, "no OpenCL device 99");
}

static void build_error_in_task(void)
{
	float v[6] = {1, 2, 3, 4, 5, 6}, got[6];
	starnn_tensor *t = test_tensor("t", 2, (const int64_t[]){2, 3}, v);
	TEST_OK(submit1(&broken_cl, t));
	int rc = starnn_wait();
	const char *m = starnn_error_message();
	printf("a task whose program does not build: %s\n", m);
	TEST_ASSERT(rc == STARNN_EOPENCL, "a task whose program does not build: starnn_wait returns %d", rc);
	TEST_ASSERT(contains(m, "test_broken") && contains(m, "undeclared_name_of_this_test"),
	            "its error holds the compiler's log: %s", m);
	TEST_OK(starnn_tensor_read_f32(t, got));
	TEST_ASSERT(!memcmp(got, v, sizeof v), "the failed task left its data as they were");
	/* again: the stored error, not a second build */
	TEST_OK(submit1(&broken_cl, t));
	rc = starnn_wait();
	TEST_ASSERT(rc == STARNN_EOPENCL && contains(starnn_error_message(), "undeclared_name_of_this_test"),
	            "a second task of that program fails the same way: %d %s", rc, starnn_error_message());
	starnn_tensor_destroy(t);
}

static void launch_error(void)
{
	float v[6] = {1, 2, 3, 4, 5, 6}, got[6];
	starnn_tensor *t = test_tensor("t", 2, (const int64_t[]){2, 3}, v);
	TEST_OK(submit1(&good_cl, t));
	TEST_OK(starnn_wait());
	TEST_OK(starnn_tensor_read_f32(t, got));
	TEST_ASSERT(got[0] == 2 && got[5] == 12, "the good program ran: %g .. %g", got[0], got[5]);
	TEST_OK(submit1(&wrong_size_cl, t));
	int rc = starnn_wait();
	const char *m = starnn_error_message();
	printf("a launch that fails: %s\n", m);
	TEST_ASSERT(rc == STARNN_EOPENCL, "a launch with a wrong argument size: starnn_wait returns %d", rc);
	TEST_ASSERT(contains(m, "test_twice") && contains(m, "'twice'") && contains(m, "clSetKernelArg") &&
	                contains(m, "argument 0") && contains(m, "CL_INVALID_ARG_SIZE"),
	            "the launch error names the operation, the kernel, the call and the argument: %s", m);
	starnn_tensor_destroy(t);
}

/* A codelet without an OpenCL function, the tasks restricted to OpenCL
 * workers: refused at submission, saying so (StarPU alone: -ENODEV). */
static void no_opencl_function(void)
{
	starnn_tensor *t = test_tensor("t", 2, (const int64_t[]){2, 3}, NULL);
	int rc = submit1(&cpu_only_cl, t);
	const char *m = starnn_error_message();
	printf("a codelet without an OpenCL function: %s\n", m);
	TEST_ASSERT(rc == STARNN_ENODEV && contains(m, "test_cpu_only") && contains(m, "no OpenCL implementation"),
	            "a CPU-only codelet on OpenCL workers: %d (%s)", rc, m);
	starnn_tensor_destroy(t);
}

/* STARPU_LIMIT_OPENCL_MEM=8 (MiB): 4 Mi floats (16 MiB) fit no device. */
static void too_large(void)
{
	starnn_tensor *big;
	TEST_OK(starnn_tensor_new(&big, "big", STARNN_FP32, 2, 1024, 4096));
	int rc = starnn_scale(2.0f, big);
	const char *m = starnn_error_message();
	printf("data larger than the device: %s\n", m);
	TEST_ASSERT(rc == STARNN_ENOMEM, "a task restricted to a device its data do not fit: %d (%s)", rc, m);
	TEST_ASSERT(contains(m, "scale") && contains(m, "16.0 MiB") && contains(m, "STARPU_LIMIT_OPENCL_MEM"),
	            "the message says why: %s", m);
	TEST_ASSERT(starnn_fill(1.5f, big) == STARNN_ENOMEM, "a fill of it on the device is refused too");
	TEST_OK(starnn_wait()); /* (refused at submission: nothing failed in a task) */
	/* allowed on the CPU too: it runs there */
	starnn_set_where(STARPU_CPU | STARPU_OPENCL);
	TEST_OK(starnn_fill(1.5f, big));
	TEST_OK(starnn_scale(2.0f, big));
	float *got = test_read(big);
	size_t bad = 0;
	for (size_t i = 0; i < 1024 * 4096; i++)
		bad += got[i] != 3.0f;
	TEST_ASSERT(bad == 0, "fill and scale of 16 MiB, on the CPU: %zu wrong", bad);
	free(got);
	/* a small one still goes to the device */
	starnn_set_where(STARPU_OPENCL);
	starnn_tensor *small;
	TEST_OK(starnn_tensor_new(&small, "small", STARNN_FP32, 2, 4, 4));
	TEST_OK(starnn_fill(1.0f, small));
	TEST_OK(starnn_scale(3.0f, small));
	got = test_read(small);
	TEST_ASSERT(got[0] == 3.0f && got[15] == 3.0f, "a small task on the device: %g", got[0]);
	free(got);
	starnn_tensor_destroy(big), starnn_tensor_destroy(small);
}
#endif

int main(void)
{
#ifndef STARNN_USE_OPENCL
	printf("SKIP: this starnn was built without OpenCL\n");
	return TEST_SKIP;
#else
	setenv("STARPU_LIMIT_OPENCL_MEM", "8", 0);
	test_init(); /* (the _opencl kind: tests/testlib.h) */
	build_error_api();
	build_error_in_task();
	launch_error();
	no_opencl_function();
	too_large();
	return test_finish();
#endif
}
