/*
 * The slice of the NVML ABI that gpuheal's agent uses, declared from the
 * values in go-nvml's pkg/nvml (const.go, types_gen.go, nvml.h). Only
 * what the stub needs; the layouts must match go-nvml's Go structs byte
 * for byte, since cgo passes pointers to them straight through.
 */
#ifndef GPUHEAL_NVML_STUB_H
#define GPUHEAL_NVML_STUB_H

#include <stddef.h>

/* Only the NVML API is exported; the stub's own helpers stay local. */
#define NVML_API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_UNKNOWN = 999,
};

enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
typedef int nvmlEnableState_t;

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum { NVML_TEMPERATURE_GPU = 0 };

/* Event types (nvmlEventType*). */
#define NVML_EVENT_SBE 0x1ULL
#define NVML_EVENT_DBE 0x2ULL
#define NVML_EVENT_PSTATE 0x4ULL
#define NVML_EVENT_XID 0x8ULL
#define NVML_EVENT_CLOCK 0x10ULL
#define NVML_EVENT_GPU_UNAVAILABLE 0x4000ULL
#define NVML_EVENT_RECOVERY_ACTION 0x8000ULL

/* Field ids and value types of nvmlDeviceGetFieldValues. */
#define NVML_FI_DEV_MEMORY_TEMP 82
#define NVML_FI_DEV_GET_GPU_RECOVERY_ACTION 230
enum { NVML_VALUE_TYPE_UNSIGNED_INT = 1 };

enum { NVML_GPU_FABRIC_STATE_COMPLETED = 3 };

/* Size asked for by go-nvml for the driver version string. */
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	union {
		double dVal;
		unsigned int uiVal;
		unsigned long ulVal;
		unsigned long long ullVal;
		long long sllVal;
		int siVal;
		unsigned short usVal;
	} value;
} nvmlFieldValue_t;

typedef struct {
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;
} nvmlGpuFabricInfo_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

/* The stub's state, shared by its source files. */
enum stub_mode { MODE_OK, MODE_NO_DRIVER, MODE_LOST_GPU, MODE_XID, MODE_OLD_DRIVER };

#define STUB_GPUS 8
#define STUB_LOST_GPU 3 /* the GPU lost-gpu mode loses */
#define STUB_XID_GPU 5  /* the GPU xid mode's Xid 79 names */
#define STUB_NVLINKS 18 /* NVLink 4 links of an H100 SXM */

struct nvmlDevice_st {
	unsigned int index;
};

extern enum stub_mode stub_mode;
extern struct nvmlDevice_st stub_devices[STUB_GPUS];

/* stub_device_check validates a handle and answers for the mode: SUCCESS
 * means "go on and fill in the value". */
nvmlReturn_t stub_device_check(nvmlDevice_t d);
int stub_initialized(void);
/* stub_old_driver is true for the R470 build or the old-driver mode. */
int stub_old_driver(void);
nvmlReturn_t stub_copy_string(char *dst, unsigned int length, const char *src);

/* CHECK returns the mode's answer for d unless it is SUCCESS; OUT
 * refuses a NULL out-parameter. */
#define CHECK(d)                                          \
	do {                                              \
		nvmlReturn_t r_ = stub_device_check(d);   \
		if (r_ != NVML_SUCCESS)                   \
			return r_;                        \
	} while (0)

#define OUT(p)                                            \
	do {                                              \
		if ((p) == NULL)                          \
			return NVML_ERROR_INVALID_ARGUMENT; \
	} while (0)

#endif
