// Package smi is the gpu.Source that reads GPUs through `nvidia-smi -q -x`.
// It needs no cgo and no NVML bindings, only the nvidia-smi binary the
// driver ships, which makes it the fallback where the NVML backend cannot
// load and the parser behind `gpuheal diagnose` for saved dumps.
package smi

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"github.com/gpuheal/gpuheal/internal/gpu"
)

// BackendName is the gpu.Source name of this backend.
const BackendName = "smi"

// maxGPUs bounds attached_gpus: the largest systems have a few dozen GPUs,
// and a larger number is a corrupt field, not a node.
const maxGPUs = 4096

// Parse reads the output of `nvidia-smi -q -x` (DTD v10 to v13). The
// returned error is for output that is not nvidia-smi XML at all; a value
// that cannot be read becomes nil plus a gpu.QueryError in the Errors of
// its GPU (or of the node), so one bad field never costs the others.
// Time is left zero: only the caller knows when the output was taken.
// Input past MaxOutputBytes, or with a field past MaxFieldBytes, is
// refused before it is decoded.
func Parse(r io.Reader) (*gpu.NodeSnapshot, error) {
	data, err := readBounded(r)
	if err != nil {
		return nil, err
	}
	return parse(data)
}

func parse(data []byte) (*gpu.NodeSnapshot, error) {
	if len(data) > MaxOutputBytes {
		return nil, errTooLarge()
	}
	if err := checkFieldSizes(data); err != nil {
		return nil, err
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	var doc smiLog
	if err := d.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			// Plain text where XML was expected: nvidia-smi prints its
			// failures ("No devices were found", "NVIDIA-SMI has failed
			// because it couldn't communicate with the NVIDIA driver")
			// as text, so show the start of it.
			return nil, fmt.Errorf("nvidia-smi output has no <nvidia_smi_log> element; it starts with %q", head(data))
		}
		line, col := d.InputPos()
		return nil, fmt.Errorf("parsing nvidia-smi XML at line %d, column %d (byte %d): %w",
			line, col, d.InputOffset(), err)
	}

	snap := &gpu.NodeSnapshot{Backend: BackendName, GPUs: make([]gpu.GPUSnapshot, 0, len(doc.GPUs))}
	node := recorder{where: "node", errs: &snap.Errors}
	snap.DriverVersion = node.text("driver_version", doc.DriverVersion)
	snap.CUDADriverVersion = node.text("cuda_version", doc.CUDAVersion)
	for i := range doc.GPUs {
		snap.GPUs = append(snap.GPUs, convertGPU(i, &doc.GPUs[i]))
	}

	// attached_gpus counts the GPUs the driver enumerates; a GPU it
	// enumerates but nvidia-smi cannot open has no <gpu> block. Such a GPU
	// is still found (it is on the bus), and the gap is worth an error:
	// it is how a GPU starts to go missing. Output taken with -i shows
	// the same gap legitimately, and says so in the same way.
	snap.FoundGPUs = len(snap.GPUs)
	if n := node.u64("attached_gpus", doc.AttachedGPUs, ""); n != nil {
		switch {
		case *n > maxGPUs:
			node.add("attached_gpus", false, "%d GPUs is not plausible", *n)
		case *n > uint64(len(snap.GPUs)):
			snap.FoundGPUs = int(*n)
			node.add("attached_gpus", false, "driver reports %d GPUs but the output describes %d", *n, len(snap.GPUs))
		}
	}
	return snap, nil
}

func head(data []byte) string {
	const n = 80
	data = bytes.TrimSpace(data)
	if len(data) > n {
		return string(data[:n]) + "…"
	}
	return string(data)
}
