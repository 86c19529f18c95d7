//go:build cgo

package nvml

import (
	"context"
	"fmt"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// nodeState caches the versions, which cannot change while NVML is
// initialized: a driver upgrade unloads the library under us.
type nodeState struct {
	guard  guard
	driver string
	cuda   string
}

func (src *Source) readNode(ctx context.Context, snap *gpu.NodeSnapshot) {
	n := &src.node
	if n.driver == "" || n.cuda == "" {
		if call, ok := n.guard.stuck(); ok {
			snap.Errors = append(snap.Errors, skipped(call))
		} else {
			s := src.nodeSession(ctx)
			if n.driver == "" {
				n.driver, _ = get(s, "SystemGetDriverVersion", src.lib.SystemGetDriverVersion)
			}
			if n.cuda == "" {
				if v, ok := get(s, "SystemGetCudaDriverVersion", src.lib.SystemGetCudaDriverVersion); ok {
					n.cuda = cudaVersion(v)
				}
			}
			snap.Errors = append(snap.Errors, s.errs...)
		}
	}
	snap.DriverVersion = n.driver
	snap.CUDADriverVersion = n.cuda
}

// cudaVersion turns NVML's 1000×major + 10×minor (12020) into "12.2".
func cudaVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

func skipped(call string) gpu.QueryError {
	return gpu.QueryError{
		Query:   call,
		Message: "skipped: an earlier " + call + " call has not returned",
		Timeout: true,
	}
}
