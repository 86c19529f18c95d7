/*
 * NVLink, fabric and events of the stand-in libnvidia-ml. The R470 build
 * has no nvmlDeviceGetGpuFabricInfo (added with Hopper's NVLink fabric).
 */
#include <string.h>
#include <time.h>

#include "nvml_stub.h"

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, nvmlEnableState_t *active)
{
	CHECK(d);
	OUT(active);
	/* Past the GPU's last link NVML answers INVALID_ARGUMENT: the agent
	 * walks links until it sees that. */
	if (link >= STUB_NVLINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	*active = NVML_FEATURE_ENABLED;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
						      unsigned long long *value)
{
	CHECK(d);
	OUT(value);
	if (link >= STUB_NVLINKS || counter < 0 || counter > 4)
		return NVML_ERROR_INVALID_ARGUMENT;
	*value = 0;
	return NVML_SUCCESS;
}

#ifndef NVML_STUB_R470
NVML_API nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, nvmlGpuFabricInfo_t *info)
{
	CHECK(d);
	OUT(info);
	if (stub_old_driver())
		return NVML_ERROR_NOT_SUPPORTED;
	memset(info, 0, sizeof *info);
	memset(info->clusterUuid, 0xab, sizeof info->clusterUuid);
	info->status = NVML_SUCCESS;
	info->cliqueId = 32766;
	info->state = NVML_GPU_FABRIC_STATE_COMPLETED;
	return NVML_SUCCESS;
}
#endif

/* One event set at a time is all the agent makes. */
struct nvmlEventSet_st {
	unsigned long long registered[STUB_GPUS];
};
static struct nvmlEventSet_st the_set;
static int xid_delivered;

NVML_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!stub_initialized())
		return NVML_ERROR_UNINITIALIZED;
	OUT(set);
	memset(&the_set, 0, sizeof the_set);
	*set = &the_set;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (set != &the_set)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_SUCCESS;
}

/* R470 knows neither the GPU-unavailable nor the recovery-action event. */
NVML_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types)
{
	CHECK(d);
	OUT(types);
	*types = NVML_EVENT_SBE | NVML_EVENT_DBE | NVML_EVENT_PSTATE | NVML_EVENT_XID | NVML_EVENT_CLOCK;
	if (!stub_old_driver())
		*types |= NVML_EVENT_GPU_UNAVAILABLE | NVML_EVENT_RECOVERY_ACTION;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
	CHECK(d);
	unsigned long long supported;
	nvmlDeviceGetSupportedEventTypes(d, &supported);
	if (set != &the_set || (types & ~supported) != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	set->registered[d->index] |= types;
	return NVML_SUCCESS;
}

/* In xid mode the first wait delivers Xid 79 (GPU fallen off the bus) on
 * STUB_XID_GPU, if the agent registered for Xids there; every other wait
 * blocks for its timeout and times out, as an idle driver does. */
NVML_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
	if (set != &the_set || data == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (stub_mode == MODE_XID && (set->registered[STUB_XID_GPU] & NVML_EVENT_XID) &&
	    !__atomic_exchange_n(&xid_delivered, 1, __ATOMIC_ACQ_REL)) {
		memset(data, 0, sizeof *data);
		data->device = &stub_devices[STUB_XID_GPU];
		data->eventType = NVML_EVENT_XID;
		data->eventData = 79;
		data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFF;
		return NVML_SUCCESS;
	}
	struct timespec ts = {.tv_sec = timeoutms / 1000, .tv_nsec = (long)(timeoutms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		; /* EINTR: Go's runtime signals its threads; sleep the rest */
	return NVML_ERROR_TIMEOUT;
}
