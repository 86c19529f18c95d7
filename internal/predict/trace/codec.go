package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gpuheal/gpuheal/internal/predict"
)

// Magic starts every GPU file; Version is the layout described in doc.go.
const (
	Magic   = "GHTR"
	Version = 1
)

// Field bits of a record's mask.
const (
	bitXids     = predict.NumGauges
	bitFlags    = bitXids + 1
	bitClock    = bitXids + 2
	bitPCIe     = bitXids + 3
	bitNVLink   = bitXids + 4
	bitRecovery = bitXids + 5
	bitRead     = bitXids + 6
	bitSkip     = bitXids + 7
	bitCounter0 = bitXids + 8
	numBits     = bitCounter0 + predict.NumCounters
)

// Limits the decoder enforces on outside input.
const (
	// MaxXidsPerSample bounds one sample's Xid list.
	MaxXidsPerSample = 1024
	// MaxSamples bounds one file: ten years at 1 s.
	MaxSamples = 10 * 366 * 86400
	maxSkip    = MaxSamples
)

const unreported = math.MinInt32

// Header describes one GPU file.
type Header struct {
	GPU      int
	Start    time.Time // time of the first sample
	Interval time.Duration
	Samples  int
}

// gaugeValue is a gauge as stored: rounded to a whole unit, or unreported.
func gaugeValue(v float32) int64 {
	if v != v || v > math.MaxInt32 || v < math.MinInt32+1 {
		return unreported
	}
	return int64(math.Round(float64(v)))
}

func gaugeFloat(v int64) float32 {
	if v == unreported {
		return predict.NaN
	}
	return float32(v)
}

func flagsOf(s *predict.Sample) uint64 {
	var f uint64
	if s.Missing {
		f |= 1
	}
	if s.RemappedRowsPending {
		f |= 2
	}
	if s.RemappedRowsFailure {
		f |= 4
	}
	return f
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// errShort is returned for data that ends inside a value.
var errShort = errors.New("data ends inside a value")

// cursor reads varints from a byte slice and remembers where it is.
type cursor struct {
	data []byte
	off  int
}

func (c *cursor) uvarint() (uint64, error) {
	v, n := binary.Uvarint(c.data[c.off:])
	if n <= 0 {
		if n == 0 {
			return 0, errShort
		}
		return 0, errors.New("varint overflows 64 bits")
	}
	c.off += n
	return v, nil
}

func (c *cursor) bytes(n int) ([]byte, error) {
	if len(c.data)-c.off < n {
		return nil, errShort
	}
	b := c.data[c.off : c.off+n]
	c.off += n
	return b, nil
}

func (c *cursor) bounded(what string, limit uint64) (uint64, error) {
	v, err := c.uvarint()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if v > limit {
		return 0, fmt.Errorf("%s %d: more than %d", what, v, limit)
	}
	return v, nil
}
