/*
 * Clock event reasons, PCIe, persistence and MIG of the stand-in
 * libnvidia-ml. The R470 build leaves out the R535 name of the clock
 * reasons call, so the symbol is really missing from its dynamic table.
 */
#include "nvml_stub.h"

#define CLOCKS_EVENT_GPU_IDLE 0x1ULL

#ifndef NVML_STUB_R470
/* R535 renamed "throttle reasons" to "clocks event reasons". */
NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons)
{
	CHECK(d);
	OUT(reasons);
	*reasons = CLOCKS_EVENT_GPU_IDLE;
	return NVML_SUCCESS;
}
#endif

NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *reasons)
{
	CHECK(d);
	OUT(reasons);
	*reasons = CLOCKS_EVENT_GPU_IDLE;
	return NVML_SUCCESS;
}

static nvmlReturn_t answer(nvmlDevice_t d, unsigned int *out, unsigned int v)
{
	CHECK(d);
	OUT(out);
	*out = v;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *v) { return answer(d, v, 0); }
NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return answer(d, v, 5); }
NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return answer(d, v, 5); }
NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return answer(d, v, 16); }
NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return answer(d, v, 16); }

NVML_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *mode)
{
	CHECK(d);
	OUT(mode);
	*mode = NVML_FEATURE_ENABLED;
	return NVML_SUCCESS;
}

/* MIG is off, so the MIG device calls below answer as NVML does for a
 * GPU without MIG devices; they are exported because the agent links
 * them and would call them on a GPU in MIG mode. */
NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
	CHECK(d);
	OUT(current);
	OUT(pending);
	*current = *pending = 0; /* NVML_DEVICE_MIG_DISABLE */
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) { return answer(d, count, 7); }

NVML_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig)
{
	(void)index, (void)mig;
	CHECK(d);
	return NVML_ERROR_NOT_FOUND;
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
	(void)id;
	CHECK(d);
	return NVML_ERROR_INVALID_ARGUMENT; /* not a MIG device handle */
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
	(void)id;
	CHECK(d);
	return NVML_ERROR_INVALID_ARGUMENT;
}
