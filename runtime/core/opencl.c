/* The StarPU side of the OpenCL backend (runtime/core/opencl.h,
 * docs/opencl.md): programs built per device at first use, kernels per
 * worker, errors of builds and launches, the start-up check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/core/opencl.h"

#ifdef STARNN_USE_OPENCL

/* One program on one worker. StarPU 1.3 drives each OpenCL device with one
 * worker: the program is the device's, the kernel objects the worker's
 * (clSetKernelArg changes a kernel object: one per thread). Only the
 * worker's own thread reads or writes its entries while tasks run;
 * starnn_opencl_shutdown frees them once none does. */
struct entry {
	const struct starnn_opencl_program *p;
	cl_program program;
	cl_kernel *kernels;
	char **names;
	struct starnn_opencl_ctx ctx;
	char *error; /* the build's message when it failed (said again to later tasks) */
};

static struct worker_cache {
	struct entry *e;
	int n, cap;
} caches[STARPU_NMAXWORKERS];

const char *starnn_opencl_options(int devid, char *buf, size_t size)
{
	cl_device_id dev = NULL;
	cl_device_fp_config fp = 0;
	starpu_opencl_get_device(devid, &dev);
	if (dev && clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) != CL_SUCCESS)
		fp = 0;
	snprintf(buf, size, "%s%s%s", STARNN_OPENCL_OPTIONS, fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " " : "",
	         fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? STARNN_OPENCL_OPTION_DIVSQRT : "");
	return buf;
}

static const char *device_name(cl_device_id dev, char *buf, size_t size)
{
	if (!dev || clGetDeviceInfo(dev, CL_DEVICE_NAME, size, buf, NULL) != CL_SUCCESS)
		snprintf(buf, size, "?");
	buf[size - 1] = '\0';
	return buf;
}

int starnn_opencl_build(const char *name, const char *source, int devid, cl_program *out)
{
	cl_context context = NULL;
	cl_device_id dev = NULL;
	char dname[128], options[160];
	*out = NULL;
	if (devid < 0 || devid >= STARPU_MAXOPENCLDEVS)
		return starnn_error(STARNN_EINVAL, "OpenCL program '%s': no OpenCL device %d", name, devid);
	starpu_opencl_get_context(devid, &context);
	starpu_opencl_get_device(devid, &dev);
	if (!context || !dev)
		return starnn_error(STARNN_ENODEV, "OpenCL program '%s': StarPU drives no OpenCL device %d", name, devid);
	device_name(dev, dname, sizeof dname);
	starnn_opencl_options(devid, options, sizeof options);
	cl_int err;
	cl_program prog = clCreateProgramWithSource(context, 1, &source, NULL, &err);
	if (!prog || err != CL_SUCCESS)
		return starnn_error(STARNN_EOPENCL, "OpenCL program '%s' on device %d (%s): clCreateProgramWithSource: %s",
		                    name, devid, dname, starnn_cl_error_name(err));
	err = clBuildProgram(prog, 1, &dev, options, NULL, NULL);
	if (err != CL_SUCCESS) {
		size_t len = 0;
		char *log = NULL;
		if (clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) == CL_SUCCESS && len > 0 &&
		    (log = malloc(len + 1)) != NULL &&
		    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL) == CL_SUCCESS)
			log[len] = '\0';
		else if (log)
			log[0] = '\0';
		int rc = starnn_error(STARNN_EOPENCL,
		                      "OpenCL program '%s' does not build for device %d (%s) with options '%s': %s; the "
		                      "compiler's log:\n%s",
		                      name, devid, dname, options, starnn_cl_error_name(err),
		                      log && *log ? log : "(empty)");
		free(log);
		clReleaseProgram(prog);
		return rc;
	}
	*out = prog;
	return 0;
}

/* The kernels of e->program for this worker, by name. */
static int make_kernels(struct entry *e, int devid)
{
	cl_uint n = 0;
	cl_int err = clCreateKernelsInProgram(e->program, 0, NULL, &n);
	if (err == CL_SUCCESS && n > 0) {
		e->kernels = calloc(n, sizeof *e->kernels);
		e->names = calloc(n, sizeof *e->names);
		if (!e->kernels || !e->names)
			return starnn_error(STARNN_ENOMEM, "OpenCL program '%s': out of memory", e->p->name);
		err = clCreateKernelsInProgram(e->program, n, e->kernels, NULL);
		if (err == CL_SUCCESS)
			e->ctx.nkernels = n; /* (release() frees them from here on) */
	}
	if (err != CL_SUCCESS)
		return starnn_error(STARNN_EOPENCL, "OpenCL program '%s' on device %d: clCreateKernelsInProgram: %s",
		                    e->p->name, devid, starnn_cl_error_name(err));
	for (cl_uint i = 0; i < n; i++) {
		size_t len = 0;
		if (clGetKernelInfo(e->kernels[i], CL_KERNEL_FUNCTION_NAME, 0, NULL, &len) != CL_SUCCESS ||
		    !(e->names[i] = calloc(len + 1, 1)) ||
		    clGetKernelInfo(e->kernels[i], CL_KERNEL_FUNCTION_NAME, len, e->names[i], NULL) != CL_SUCCESS)
			return starnn_error(STARNN_EOPENCL, "OpenCL program '%s' on device %d: a kernel's name", e->p->name,
			                    devid);
	}
	e->ctx.names = (const char *const *)e->names;
	e->ctx.kernels = e->kernels;
	return 0;
}

static void release(struct entry *e)
{
	for (unsigned i = 0; i < e->ctx.nkernels; i++) {
		if (e->kernels && e->kernels[i])
			clReleaseKernel(e->kernels[i]);
		if (e->names)
			free(e->names[i]);
	}
	free(e->kernels), free(e->names), free(e->error);
	if (e->program)
		clReleaseProgram(e->program);
	memset(e, 0, sizeof *e);
}

struct starnn_opencl_ctx *starnn_opencl_ctx(const struct starnn_opencl_program *p)
{
	int w = starpu_worker_get_id();
	if (w < 0 || starpu_worker_get_type(w) != STARPU_OPENCL_WORKER) {
		starnn_defer_error(STARNN_ESTATE, "OpenCL program '%s' asked for outside an OpenCL worker", p->name);
		return NULL;
	}
	struct worker_cache *c = &caches[w];
	for (int i = 0; i < c->n; i++) {
		struct entry *e = &c->e[i];
		if (e->p != p)
			continue;
		if (e->error) { /* (the first task that met it deferred the whole message) */
			starnn_defer_error(STARNN_EOPENCL, "%s", e->error);
			return NULL;
		}
		e->ctx.failed_call = e->ctx.failed_kernel = NULL;
		e->ctx.failed_arg = -1;
		return &e->ctx;
	}
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		struct entry *grown = realloc(c->e, (size_t)cap * sizeof *grown);
		if (!grown) {
			starnn_defer_error(STARNN_ENOMEM, "OpenCL program '%s': out of memory", p->name);
			return NULL;
		}
		c->e = grown, c->cap = cap;
	}
	struct entry *e = &c->e[c->n++];
	memset(e, 0, sizeof *e);
	e->p = p;
	int devid = starpu_worker_get_devid(w);
	int rc = starnn_opencl_build(p->name, p->source, devid, &e->program);
	if (rc == 0)
		rc = make_kernels(e, devid);
	if (rc < 0) {
		/* kept: later tasks of this program on this worker say it again
		 * without building again */
		release(e);
		e->p = p;
		e->error = strdup(starnn_error_message());
		starnn_defer_last_error(rc);
		return NULL;
	}
	e->ctx.queue = NULL;
	starpu_opencl_get_current_queue(&e->ctx.queue);
	starpu_opencl_get_device(devid, &e->ctx.device);
	e->ctx.program = p->name;
	e->ctx.failed_arg = -1;
	return &e->ctx;
}

void starnn_opencl_launched(struct starnn_opencl_ctx *ctx, const char *op, cl_int err, const char *file, int line)
{
	if (err == CL_SUCCESS)
		return;
	char arg[32] = "";
	if (ctx->failed_arg >= 0)
		snprintf(arg, sizeof arg, " (argument %d)", ctx->failed_arg);
	starnn_defer_error_at(file, line, STARNN_EOPENCL,
	                      "%s: OpenCL launch of kernel '%s' of program '%s' failed in %s%s: %s", op,
	                      ctx->failed_kernel ? ctx->failed_kernel : "?", ctx->program,
	                      ctx->failed_call ? ctx->failed_call : "the launcher", arg, starnn_cl_error_name(err));
}

void starnn_opencl_shutdown(void)
{
	for (int w = 0; w < STARPU_NMAXWORKERS; w++) {
		for (int i = 0; i < caches[w].n; i++)
			release(&caches[w].e[i]);
		free(caches[w].e);
		caches[w].e = NULL;
		caches[w].n = caches[w].cap = 0;
	}
}

/* "2 platforms: Portable Computing Language (1 CPU device), NVIDIA CUDA (1 GPU device)" */
static void describe_platforms(char *buf, size_t size)
{
	cl_platform_id plat[8];
	cl_uint np = 0;
	if (clGetPlatformIDs(8, plat, &np) != CL_SUCCESS || np == 0) {
		snprintf(buf, size, "no OpenCL platform (no ICD: install one, e.g. pocl-opencl-icd for the CPU)");
		return;
	}
	size_t len = (size_t)snprintf(buf, size, "OpenCL platforms found:");
	for (cl_uint i = 0; i < np && i < 8 && len < size; i++) {
		char name[96] = "?";
		cl_uint ncpu = 0, ngpu = 0, nacc = 0;
		clGetPlatformInfo(plat[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
		name[sizeof name - 1] = '\0';
		if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_CPU, 0, NULL, &ncpu) != CL_SUCCESS)
			ncpu = 0;
		if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_GPU, 0, NULL, &ngpu) != CL_SUCCESS)
			ngpu = 0;
		if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ACCELERATOR, 0, NULL, &nacc) != CL_SUCCESS)
			nacc = 0;
		len += (size_t)snprintf(buf + len, size - len, "%s %s (%u GPU, %u CPU, %u accelerator device(s))",
		                        i ? ";" : "", name, ngpu, ncpu, nacc);
	}
}
#else
void starnn_opencl_shutdown(void)
{
}
#endif

int starnn_opencl_check_workers(void)
{
	const char *v = getenv("STARPU_NOPENCL");
	char *end;
	long asked = v && *v ? strtol(v, &end, 10) : 0;
	if (!v || !*v || *end || asked <= 0)
		return 0;
#ifndef STARNN_USE_OPENCL
	return starnn_error(STARNN_ENODEV,
	                    "STARPU_NOPENCL=%s asks for OpenCL workers, but this starnn was built without OpenCL "
	                    "(config.summary: OpenCL kernels: no; configure --enable-opencl says what is missing)",
	                    v);
#else
	unsigned got = starpu_opencl_worker_get_count();
	if ((long)got >= asked)
		return 0;
	char found[512];
	describe_platforms(found, sizeof found);
	const char *on_cpus = getenv("STARPU_OPENCL_ON_CPUS");
	return starnn_error(STARNN_ENODEV,
	                    "STARPU_NOPENCL=%s asks for %ld OpenCL worker(s), StarPU started %u: %s.%s", v, asked, got,
	                    found,
	                    on_cpus && atoi(on_cpus) > 0
	                        ? ""
	                        : " StarPU leaves CPU devices (POCL's) out unless STARPU_OPENCL_ON_CPUS=1");
#endif
}
