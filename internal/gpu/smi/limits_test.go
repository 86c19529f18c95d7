package smi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// hugeAttribute is an otherwise valid document whose root element carries
// one n-byte attribute: the shape that took 3.3 GB for 200 MB.
func hugeAttribute(n int) io.Reader {
	return io.MultiReader(strings.NewReader(`<?xml version="1.0" ?><nvidia_smi_log x="`),
		io.LimitReader(repeatByte('a'), int64(n)),
		strings.NewReader(`">`+strings.TrimPrefix(oneGPU(""), `<?xml version="1.0" ?>
<nvidia_smi_log>`)))
}

type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// allocated is the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestParseBoundsInputSize(t *testing.T) {
	const size = 64 << 20 // 8 times the limit
	var err error
	got := allocated(func() { _, err = Parse(hugeAttribute(size)) })
	t.Logf("Parse of a %d MiB attribute allocated %d MiB", size>>20, got>>20)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxOutputBytes)) {
		t.Errorf("Parse of a %d-byte attribute: error %v, want one naming the %d-byte limit", size, err, MaxOutputBytes)
	}
	// Reading up to the limit costs about twice the limit (io.ReadAll's
	// growth; four times under -race); decoding the whole input cost 349
	// MiB before the bound.
	if limit := uint64(6 * MaxOutputBytes); got > limit {
		t.Errorf("Parse allocated %d bytes, want at most %d", got, limit)
	}
}

func TestParseBoundsFieldSize(t *testing.T) {
	for _, tt := range []struct{ name, doc string }{
		{"attribute", oneGPU(`<product_name v="` + strings.Repeat("a", MaxFieldBytes+1) + `">A100</product_name>`)},
		{"text", oneGPU(`<product_name>` + strings.Repeat("a", MaxFieldBytes+1) + `</product_name>`)},
		{"comment", oneGPU(`<!--` + strings.Repeat("a", MaxFieldBytes+1) + `-->`)},
	} {
		_, err := Parse(strings.NewReader(tt.doc))
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes", MaxFieldBytes)) || !strings.Contains(err.Error(), "at byte") {
			t.Errorf("%s of %d bytes: error %v, want one naming the %d-byte field limit and where", tt.name, MaxFieldBytes+1, err, MaxFieldBytes)
		}
	}
	// A field just at the limit is still read.
	if _, err := Parse(strings.NewReader(oneGPU(`<product_name>` + strings.Repeat("a", MaxFieldBytes-10) + `</product_name>`))); err != nil {
		t.Errorf("a field within the limit: %v", err)
	}
}

func TestExecRunnerBoundsOutput(t *testing.T) {
	// A child writing twice the limit: the runner stops keeping its output
	// at the limit, and the source says so rather than parse it.
	src := New(Options{Run: func(ctx context.Context, _ string, _ ...string) ([]byte, error) {
		return ExecRunner(ctx, "head", "-c", fmt.Sprint(2*MaxOutputBytes), "/dev/zero")
	}})
	_, err := src.Snapshot(context.Background())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(MaxOutputBytes)) {
		t.Errorf("Snapshot of an oversize output: error %v, want one naming the %d-byte limit", err, MaxOutputBytes)
	}
	var b boundedBuffer
	_, _ = b.Write(bytes.Repeat([]byte{'x'}, MaxOutputBytes+100))
	if b.buf.Len() != MaxOutputBytes+1 || !b.over {
		t.Errorf("boundedBuffer kept %d bytes (over=%v), want %d and over", b.buf.Len(), b.over, MaxOutputBytes+1)
	}
}
