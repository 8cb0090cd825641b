/* max/c/device.h - devices of kiln's MAX C API layer.
 *
 * The host (M_HOST, id 0) always exists. Accelerators are the CUDA GPUs
 * kiln finds, then the HIP ones; where there is none,
 * KILN_MAX_ACCELERATOR=simt-emu makes the SIMT emulator accelerator 0.
 * Models on an accelerator run as kiln device models. Devices are small
 * values owned by the caller (M_freeDevice); configs and tensors copy what
 * they need from them. */
#ifndef MAX_C_DEVICE_H
#define MAX_C_DEVICE_H

#include "max/c/types.h"

MAX_C_BEGIN

/* NULL on failure (unknown type, id other than 0 for the host, an
 * accelerator id out of range or that fails to open), with the reason in
 * status. */
MAX_C_API M_Device *M_newDevice(M_DeviceType type, int id, M_Status *status);
MAX_C_API M_DeviceType M_getDeviceType(const M_Device *device); /* M_HOST for NULL */
MAX_C_API int M_getDeviceId(const M_Device *device);            /* 0 for NULL */
MAX_C_API int M_isHostDevice(const M_Device *device);           /* 1 or 0 (NULL: 0) */
/* Waits for the device's pending work: host work is always synchronous. */
MAX_C_API void M_synchronizeDevice(M_Device *device, M_Status *status);
/* "cpu" or "gpu" (static); NULL for NULL. */
MAX_C_API const char *M_getDeviceLabel(const M_Device *device);
MAX_C_API void M_freeDevice(M_Device *device); /* no-op on NULL */
MAX_C_API int M_getAcceleratorCount(void);

MAX_C_END
#endif /* MAX_C_DEVICE_H */
