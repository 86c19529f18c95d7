//go:build cgo

package nvml

import (
	"context"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// device is one GPU as NVML enumerated it at New. Only the goroutine
// reading it in the current snapshot touches its fields.
type device struct {
	index  int
	handle nvml.Device
	guard  guard

	// Identity does not change while the driver is loaded; keeping it
	// lets a GPU that stops answering still be named in its snapshot.
	id         identity
	idComplete bool
}

type identity struct {
	uuid, busID, name, serial, vbios string
	minor                            *uint64
}

func (src *Source) readGPU(ctx context.Context, d *device) gpu.GPUSnapshot {
	g := gpu.GPUSnapshot{Index: d.index}
	if call, ok := d.guard.stuck(); ok {
		d.id.fill(&g)
		g.Errors = []gpu.QueryError{skipped(call)}
		return g
	}
	s := src.deviceSession(ctx, d)
	if d.handle == nil {
		d.handle, _ = get(s, "DeviceGetHandleByIndex", func() (nvml.Device, nvml.Return) {
			return src.lib.DeviceGetHandleByIndex(d.index)
		})
	}
	if d.handle != nil {
		if !d.idComplete {
			d.readIdentity(s)
		}
		readHealth(s, d.handle, src.syms, &g)
	}
	d.id.fill(&g)
	g.Missing = s.lost
	g.Errors = s.errs
	return g
}

func (d *device) readIdentity(s *session) {
	h := d.handle
	before := len(s.errs)
	setString(&d.id.uuid, s, "GetUUID", h.GetUUID)
	if pci, ok := get(s, "GetPciInfo", h.GetPciInfo); ok {
		if id, err := gpu.NormalizePCIBusID(busID(pci)); err != nil {
			s.fail("GetPciInfo", err.Error(), false)
		} else {
			d.id.busID = id
		}
	}
	setString(&d.id.name, s, "GetName", h.GetName)
	setString(&d.id.serial, s, "GetSerial", h.GetSerial)
	setString(&d.id.vbios, s, "GetVbiosVersion", h.GetVbiosVersion)
	if d.id.minor == nil {
		if v, ok := get(s, "GetMinorNumber", h.GetMinorNumber); ok && v >= 0 {
			d.id.minor = gpu.U64(uint64(v))
		}
	}
	d.idComplete = len(s.errs) == before && !s.done()
}

func setString(dst *string, s *session, query string, fn func() (string, nvml.Return)) {
	if *dst != "" {
		return
	}
	if v, ok := get(s, query, fn); ok {
		*dst = v
	}
}

func (id identity) fill(g *gpu.GPUSnapshot) {
	g.UUID, g.PCIBusID, g.Name, g.Serial, g.VBIOS = id.uuid, id.busID, id.name, id.serial, id.vbios
	if id.minor != nil {
		g.MinorNum = gpu.U64(*id.minor)
	}
}

// busID reads the NUL-terminated C string NVML fills in; the legacy
// 16-byte field is used only by drivers that leave the long one empty.
func busID(p nvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return s
	}
	return cString(p.BusIdLegacy[:])
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
