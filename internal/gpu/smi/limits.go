package smi

import (
	"bytes"
	"fmt"
	"io"
)

// Bounds on nvidia-smi output. encoding/xml copies every attribute value
// and text run several times while decoding (a 200 MB attribute took
// 3.3 GB), and the agent runs in 128 MiB, so the input is bounded before
// the decoder sees it. Real output is ~25 KB per GPU: a 64-GPU node writes
// under 2 MiB, and no field is longer than a few hundred bytes.
const (
	// MaxOutputBytes bounds the whole document.
	MaxOutputBytes = 8 << 20
	// MaxFieldBytes bounds any run of bytes between tag delimiters: an
	// element's text, a tag with its attributes, a comment.
	MaxFieldBytes = 64 << 10
)

// readBounded reads r up to MaxOutputBytes and fails past it, without
// holding more than the limit in memory.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxOutputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading nvidia-smi output: %w", err)
	}
	if len(data) > MaxOutputBytes {
		return nil, errTooLarge()
	}
	return data, nil
}

func errTooLarge() error {
	return fmt.Errorf("nvidia-smi output is larger than the %d-byte limit (MaxOutputBytes): not the output of one node", MaxOutputBytes)
}

// checkFieldSizes refuses a document with a field longer than
// MaxFieldBytes, naming where it starts.
func checkFieldSizes(data []byte) error {
	start := 0
	for start < len(data) {
		i := bytes.IndexAny(data[start:], "<>")
		end := len(data)
		if i >= 0 {
			end = start + i
		}
		if end-start > MaxFieldBytes {
			return fmt.Errorf("nvidia-smi output has a field of more than %d bytes (MaxFieldBytes) at byte %d", MaxFieldBytes, start)
		}
		start = end + 1
	}
	return nil
}

// boundedBuffer is an io.Writer for a child's stdout that keeps at most
// MaxOutputBytes+1 bytes, so a runaway nvidia-smi cannot fill the agent's
// memory before the limit is checked.
type boundedBuffer struct {
	buf  bytes.Buffer
	over bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := MaxOutputBytes + 1 - b.buf.Len()
	if len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil // keep the child running to its exit; the excess is dropped
	}
	return b.buf.Write(p)
}
