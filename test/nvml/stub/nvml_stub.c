/*
 * A stand-in libnvidia-ml.so.1 for gpuheal's end-to-end ABI test: library
 * state, modes and the system-level calls. See README.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_stub.h"

enum stub_mode stub_mode;
struct nvmlDevice_st stub_devices[STUB_GPUS];
static int initialized; /* read from the agent's many threads: atomics */

int stub_initialized(void) { return __atomic_load_n(&initialized, __ATOMIC_ACQUIRE); }

/* The R470 build (-DNVML_STUB_R470) is always an old driver; the full
 * build can be told to answer like one through the mode. */
int stub_old_driver(void)
{
#ifdef NVML_STUB_R470
	return 1;
#else
	return stub_mode == MODE_OLD_DRIVER;
#endif
}

static int parse_mode(const char *s)
{
	static const struct { const char *name; enum stub_mode mode; } modes[] = {
		{"ok", MODE_OK}, {"no-driver", MODE_NO_DRIVER}, {"lost-gpu", MODE_LOST_GPU},
		{"xid", MODE_XID}, {"old-driver", MODE_OLD_DRIVER},
	};
	if (s == NULL || *s == '\0')
		s = "ok";
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		if (strcmp(s, modes[i].name) == 0) {
			stub_mode = modes[i].mode;
			return 1;
		}
	}
	/* A typo in a test must not look like a healthy node. */
	fprintf(stderr, "nvml stub: unknown GPUHEAL_NVML_STUB_MODE \"%s\"\n", s);
	return 0;
}

NVML_API nvmlReturn_t nvmlInit_v2(void)
{
	if (!parse_mode(getenv("GPUHEAL_NVML_STUB_MODE")))
		return NVML_ERROR_UNKNOWN;
	if (stub_mode == MODE_NO_DRIVER)
		return NVML_ERROR_DRIVER_NOT_LOADED;
	for (unsigned int i = 0; i < STUB_GPUS; i++)
		stub_devices[i].index = i;
	__atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlShutdown(void)
{
	if (!stub_initialized())
		return NVML_ERROR_UNINITIALIZED;
	__atomic_store_n(&initialized, 0, __ATOMIC_RELEASE);
	return NVML_SUCCESS;
}

/* The strings libnvidia-ml returns, since the agent reports them. */
NVML_API const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	default: return "Unknown Error";
	}
}

/* stub_copy_string fills an NVML string out-parameter, refusing a buffer too
 * short as the real library does (go-nvml must pass the documented size). */
nvmlReturn_t stub_copy_string(char *dst, unsigned int length, const char *src)
{
	if (dst == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!stub_initialized())
		return NVML_ERROR_UNINITIALIZED;
	return stub_copy_string(version, length, stub_old_driver() ? "470.256.02" : "550.90.07");
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	if (v == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = stub_old_driver() ? 11040 : 12040; /* works without init, as in NVML */
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!stub_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (count == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = STUB_GPUS;
	return NVML_SUCCESS;
}

/* Handles of a lost GPU are still handed out: NVML enumerated it at init,
 * and only the queries on it fail. */
NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!stub_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (index >= STUB_GPUS || device == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &stub_devices[index];
	return NVML_SUCCESS;
}

nvmlReturn_t stub_device_check(nvmlDevice_t d)
{
	if (!stub_initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (d < &stub_devices[0] || d >= &stub_devices[STUB_GPUS])
		return NVML_ERROR_INVALID_ARGUMENT;
	if (stub_mode == MODE_LOST_GPU && d->index == STUB_LOST_GPU)
		return NVML_ERROR_GPU_IS_LOST;
	return NVML_SUCCESS;
}
