/* A stand-in for libnvidia-ml.so.1 (tests/runtime/energy loads it through
 * STARNN_NVML_LIBRARY): two GPUs; GPU 0's energy counter advances by
 * 250 mJ at every read, from 5000 mJ; GPU 1 cannot tell its energy (as
 * before Volta). FAKE_NVML_INIT_FAIL=1 makes nvmlInit_v2 fail as without
 * a driver. Return codes are NVML's. */
#include <stdlib.h>

enum { NVML_SUCCESS = 0, NVML_ERROR_INVALID_ARGUMENT = 2, NVML_ERROR_NOT_SUPPORTED = 3,
       NVML_ERROR_DRIVER_NOT_LOADED = 9 };

static unsigned long long reads;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device);
int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *mj);
const char *nvmlErrorString(int result);

int nvmlInit_v2(void)
{
	const char *f = getenv("FAKE_NVML_INIT_FAIL");
	reads = 0;
	return f && *f == '1' ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}

int nvmlShutdown(void) { return NVML_SUCCESS; }

int nvmlDeviceGetCount_v2(unsigned *count)
{
	*count = 2;
	return NVML_SUCCESS;
}

static int handles[2];

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
	if (index > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &handles[index];
	return NVML_SUCCESS;
}

int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *mj)
{
	if (device != &handles[0])
		return NVML_ERROR_NOT_SUPPORTED;
	*mj = 5000 + 250 * reads++;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(int result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	default: return "Unknown Error";
	}
}
