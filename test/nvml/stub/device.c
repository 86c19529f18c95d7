/*
 * Per-GPU answers of the stand-in libnvidia-ml: identity, memory health,
 * telemetry, PCIe and modes of an idle 8×H100 SXM node.
 */
#include <stdio.h>
#include <string.h>

#include "nvml_stub.h"

/* Bus numbers of a DGX H100's GPUs; the UUIDs are made up. */
static const unsigned int bus[STUB_GPUS] = {0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf};
static const char *const uuid[STUB_GPUS] = {
	"GPU-f3a3c571-7476-4899-b5a3-adb3254a9493", "GPU-649dda6e-b49c-43dc-acbc-408cc5521660",
	"GPU-81c1e7ff-6efa-4d5b-9988-5afcbb61a9cd", "GPU-1f0e4b4a-886c-4a30-9c26-ffa8ccce240c",
	"GPU-436f40f2-74b8-4e87-bc99-1c531484f407", "GPU-a5c2948b-eed6-4fbb-a8a8-2a070c425b3f",
	"GPU-3acdf616-55d9-4c6e-b459-294ef273b44c", "GPU-fcc1b543-c49c-465b-96c2-703c4f353a13",
};
static const char *const serial[STUB_GPUS] = {
	"1654923010001", "1654923010002", "1654923010003", "1654923010004",
	"1654923010005", "1654923010006", "1654923010007", "1654923010008",
};

#define MIB (1024ULL * 1024ULL)

NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *out, unsigned int length)
{
	CHECK(d);
	return stub_copy_string(out, length, uuid[d->index]);
}

NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *out, unsigned int length)
{
	CHECK(d);
	return stub_copy_string(out, length, "NVIDIA H100 80GB HBM3");
}

NVML_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *out, unsigned int length)
{
	CHECK(d);
	return stub_copy_string(out, length, serial[d->index]);
}

NVML_API nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *out, unsigned int length)
{
	CHECK(d);
	return stub_copy_string(out, length, "96.00.99.00.01");
}

/* The long bus id has NVML's 8-digit domain, upper-case hex, as drivers
 * print it; the agent normalizes it. */
NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
	CHECK(d);
	OUT(pci);
	memset(pci, 0, sizeof *pci);
	unsigned int b = bus[d->index];
	snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", b);
	snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", b);
	pci->bus = b;
	pci->pciDeviceId = 0x233010DE; /* H100 SXM5 80GB */
	pci->pciSubSystemId = 0x16C110DE;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor)
{
	CHECK(d);
	OUT(minor);
	*minor = d->index;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, nvmlEnableState_t *current, nvmlEnableState_t *pending)
{
	CHECK(d);
	OUT(current);
	OUT(pending);
	*current = *pending = NVML_FEATURE_ENABLED;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int errorType, int counterType,
						  unsigned long long *count)
{
	CHECK(d);
	OUT(count);
	if (errorType < 0 || errorType > 1 || counterType < 0 || counterType > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 0;
	return NVML_SUCCESS;
}

/* Hopper retires no pages: it remaps rows, and says so. */
NVML_API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count,
						unsigned long long *addresses)
{
	(void)cause, (void)count, (void)addresses;
	CHECK(d);
	return NVML_ERROR_NOT_SUPPORTED;
}

NVML_API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, nvmlEnableState_t *pending)
{
	(void)pending;
	CHECK(d);
	return NVML_ERROR_NOT_SUPPORTED;
}

NVML_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
						unsigned int *pending, unsigned int *failure)
{
	CHECK(d);
	OUT(corr);
	OUT(unc);
	OUT(pending);
	OUT(failure);
	*corr = *unc = *pending = *failure = 0;
	return NVML_SUCCESS;
}

/* An unknown field id fails alone, with INVALID_ARGUMENT, as drivers
 * older than the field do; the call itself succeeds. */
NVML_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *values)
{
	CHECK(d);
	if (n <= 0 || values == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < n; i++) {
		nvmlFieldValue_t *v = &values[i];
		v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
		v->nvmlReturn = NVML_SUCCESS;
		switch (v->fieldId) {
		case NVML_FI_DEV_MEMORY_TEMP:
			v->value.uiVal = 40 + d->index;
			break;
		case NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: /* R570+ */
			if (stub_old_driver())
				v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
			else
				v->value.uiVal = 0; /* NVML_GPU_RECOVERY_ACTION_NONE */
			break;
		default:
			v->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
		}
	}
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	CHECK(d);
	OUT(u);
	u->gpu = u->memory = 0;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	CHECK(d);
	OUT(m);
	m->total = 81559 * MIB;
	m->used = 1 * MIB;
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp)
{
	CHECK(d);
	OUT(temp);
	if (sensor != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	*temp = 30 + d->index;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	CHECK(d);
	OUT(mw);
	*mw = 70000 + 1000 * d->index;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
	CHECK(d);
	OUT(mw);
	*mw = 700000;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
	CHECK(d);
	OUT(mhz);
	switch (type) {
	case NVML_CLOCK_GRAPHICS:
	case NVML_CLOCK_SM: *mhz = 1980; return NVML_SUCCESS;
	case NVML_CLOCK_MEM: *mhz = 2619; return NVML_SUCCESS;
	case NVML_CLOCK_VIDEO: *mhz = 1545; return NVML_SUCCESS;
	}
	return NVML_ERROR_INVALID_ARGUMENT;
}
