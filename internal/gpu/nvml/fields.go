//go:build cgo

package nvml

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// Field ids read in one GetFieldValues call.
const (
	fieldMemoryTemp     = nvml.FI_DEV_MEMORY_TEMP             // HBM temperature, °C
	fieldRecoveryAction = nvml.FI_DEV_GET_GPU_RECOVERY_ACTION // 230, drivers R570+
)

var fieldNames = map[uint32]string{
	fieldMemoryTemp:     "FI_DEV_MEMORY_TEMP",
	fieldRecoveryAction: "FI_DEV_GET_GPU_RECOVERY_ACTION",
}

func readFields(s *session, h nvml.Device, g *gpu.GPUSnapshot) {
	vals, ok := get(s, "GetFieldValues", func() ([]nvml.FieldValue, nvml.Return) {
		vals := []nvml.FieldValue{{FieldId: fieldMemoryTemp}, {FieldId: fieldRecoveryAction}}
		return vals, h.GetFieldValues(vals)
	})
	if !ok {
		return
	}
	for _, v := range vals {
		// Drivers older than a field id answer INVALID_ARGUMENT for it:
		// that is "not supported here", not a failure.
		if !s.check("GetFieldValues("+fieldNames[v.FieldId]+")", nvml.Return(v.NvmlReturn), []nvml.Return{nvml.ERROR_INVALID_ARGUMENT}) {
			continue
		}
		switch v.FieldId {
		case fieldMemoryTemp:
			if f, ok := fieldFloat(v); ok {
				g.MemoryTemperatureCelsius = gpu.F64(f)
			}
		case fieldRecoveryAction:
			if f, ok := fieldFloat(v); ok && f >= 0 {
				a := gpu.RecoveryAction(uint64(f))
				g.RecoveryAction = &a
			}
		}
	}
}

// fieldFloat decodes a field value's 8-byte union by its declared type;
// NVML writes it in host byte order.
func fieldFloat(v nvml.FieldValue) (float64, bool) {
	b := v.Value[:]
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.NativeEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.NativeEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.NativeEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.NativeEndian.Uint64(b))), true
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.NativeEndian.Uint32(b))), true
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.NativeEndian.Uint16(b)), true
	}
	return 0, false
}
