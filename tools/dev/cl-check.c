/* The build's check of an OpenCL program (make: kernel-check, on every
 * codelets/opencl/NAME.cl after codelets/opencl/common.cl, as
 * build-aux/cl2c --text puts them together): builds it with the OpenCL
 * runtime on the first device of the first platform that has one, with
 * the options starnn uses (runtime/base/opencl.h) and -Werror, and prints
 * the compiler's log when it does not build.
 *
 * Usage: tools/dev/cl-check FILE
 * Exit status: 0 built; 1 did not build (the log on stderr); 77 no OpenCL
 * platform or device here (make then tries clang's OpenCL front end);
 * 2 usage or an unreadable file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/opencl.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t got;
	while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap) {
			char *grown = realloc(buf, cap *= 2);
			if (!grown)
				free(buf);
			buf = grown;
		}
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE (a program's text: build-aux/cl2c --text)\n", argv[0]);
		return 2;
	}
	char *source = slurp(argv[1]);
	if (!source) {
		fprintf(stderr, "cl-check: cannot read %s\n", argv[1]);
		return 2;
	}
	cl_platform_id plat[16];
	cl_uint np = 0;
	cl_device_id dev = NULL;
	if (clGetPlatformIDs(16, plat, &np) != CL_SUCCESS)
		np = 0;
	for (cl_uint i = 0; i < np && i < 16 && !dev; i++)
		if (clGetDeviceIDs(plat[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
			dev = NULL;
	if (!dev) {
		free(source);
		return 77;
	}
	cl_int err;
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	if (!ctx) {
		fprintf(stderr, "cl-check: clCreateContext: %s\n", starnn_cl_error_name(err));
		free(source);
		return 77;
	}
	cl_device_fp_config fp = 0;
	if (clGetDeviceInfo(dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) != CL_SUCCESS)
		fp = 0;
	char options[256];
	snprintf(options, sizeof options, "%s%s%s -Werror", STARNN_OPENCL_OPTIONS,
	         fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? " " : "",
	         fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT ? STARNN_OPENCL_OPTION_DIVSQRT : "");
	const char *src = source;
	cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	int status = 0;
	if (!prog) {
		fprintf(stderr, "cl-check: clCreateProgramWithSource: %s\n", starnn_cl_error_name(err));
		status = 1;
	} else if ((err = clBuildProgram(prog, 1, &dev, options, NULL, NULL)) != CL_SUCCESS) {
		char name[128] = "?";
		size_t len = 0;
		clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
		name[sizeof name - 1] = '\0';
		clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
		char *log = calloc(len + 1, 1);
		if (log)
			clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log, NULL);
		fprintf(stderr, "cl-check: %s does not build on %s with '%s': %s; the compiler's log:\n%s\n", argv[1], name,
		        options, starnn_cl_error_name(err), log ? log : "");
		free(log);
		status = 1;
	}
	if (prog)
		clReleaseProgram(prog);
	clReleaseContext(ctx);
	free(source);
	return status;
}
