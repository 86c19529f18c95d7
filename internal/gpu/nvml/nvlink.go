//go:build cgo

package nvml

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// readNVLinks walks links from 0 until the GPU says there are no more:
// NVML has no "number of links" call, and GPUs have 4 to 18 of the 36.
func readNVLinks(s *session, h nvml.Device) []gpu.NVLink {
	var links []gpu.NVLink
	for l := range nvml.NVLINK_MAX_LINKS {
		state, ok := get(s, fmt.Sprintf("GetNvLinkState(%d)", l), func() (nvml.EnableState, nvml.Return) {
			return h.GetNvLinkState(l)
		}, nvml.ERROR_INVALID_ARGUMENT)
		if !ok {
			break
		}
		counter := func(name string, c nvml.NvLinkErrorCounter) *uint64 {
			v, ok := get(s, fmt.Sprintf("GetNvLinkErrorCounter(%d, %s)", l, name), func() (uint64, nvml.Return) {
				return h.GetNvLinkErrorCounter(l, c)
			})
			if !ok {
				return nil
			}
			return gpu.U64(v)
		}
		links = append(links, gpu.NVLink{
			Link:     l,
			Active:   state == nvml.FEATURE_ENABLED,
			Replay:   counter("DL_REPLAY", nvml.NVLINK_ERROR_DL_REPLAY),
			Recovery: counter("DL_RECOVERY", nvml.NVLINK_ERROR_DL_RECOVERY),
			CRCFlit:  counter("DL_CRC_FLIT", nvml.NVLINK_ERROR_DL_CRC_FLIT),
			CRCData:  counter("DL_CRC_DATA", nvml.NVLINK_ERROR_DL_CRC_DATA),
		})
	}
	return links
}
