/* The <op>_opencl test of an operation without OpenCL kernels yet
 * (autogen.sh builds it in place of tests/codelets/<op>.c until
 * codelets/opencl/<op>.cl exists): skips, saying so. */
#include <stdio.h>

int main(void)
{
	printf("SKIP: %s has no OpenCL kernels yet (codelets/opencl/%s.cl: docs/opencl.md, adding an operation's "
	       "OpenCL part)\n", STARNN_TEST_OP, STARNN_TEST_OP);
	return 77;
}
