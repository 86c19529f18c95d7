package trace

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuheal/gpuheal/internal/predict"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// history covers every field the codec stores: gauges that change and
// repeat, unreported gauges, runs of identical samples, Xids, flags, link
// state, counters going up and down (a reload), unread counters, a time
// skip.
func history() []predict.Sample {
	var out []predict.Sample
	s := predict.Sample{Time: t0, CountersRead: predict.AllCountersRead, NVLinkUp: 18, NVLinkTotal: 18,
		PCIeLinkGen: 5, PCIeLinkGenMax: 5, PCIeLinkWidth: 16, PCIeLinkWidthMax: 16}
	s.Gauges = [predict.NumGauges]float32{97, 60000, 65, 71, 612, 1980}
	for i := range 200 {
		s.Time = t0.Add(time.Duration(i) * 30 * time.Second)
		if i >= 150 {
			s.Time = s.Time.Add(10 * time.Minute) // a gap of 20 intervals
		}
		s.Xids = nil
		switch {
		case i%7 == 0:
			s.Gauges[predict.GaugePowerW] += 13
			s.Gauges[predict.GaugeTemperatureC]--
		case i == 30:
			s.Gauges[predict.GaugeMemoryTemperatureC] = predict.NaN
		case i == 31:
			s.Xids = []uint32{13, 13, 43, 1 << 31}
		case i == 40:
			s.Counters[predict.CounterECCCorrected] += 5
			s.Counters[predict.CounterPCIeReplay] += 1 << 40
			s.RemappedRowsPending, s.ClockEventReasons, s.RecoveryAction = true, 0x60, 1
		case i == 50:
			s.Counters[predict.CounterECCCorrected] = 0
			s.CountersRead &^= 1 << predict.CounterNVLinkCRCData
			s.PCIeLinkWidth, s.NVLinkUp = 8, 17
		case i == 60:
			s.Missing, s.RemappedRowsFailure = true, true
		}
		c := s
		out = append(out, c)
	}
	return out
}

func encode(t testing.TB, h []predict.Sample) []byte {
	t.Helper()
	e := NewEncoder(3, h[0].Time, 30*time.Second)
	for i := range h {
		if err := e.Add(&h[i]); err != nil {
			t.Fatal(err)
		}
	}
	return e.Bytes()
}

func decodeAll(data []byte) (Header, []predict.Sample, error) {
	d, err := NewDecoder(data)
	if err != nil {
		return Header{}, nil, err
	}
	var out []predict.Sample
	for {
		var s predict.Sample
		err := d.Next(&s)
		if errors.Is(err, io.EOF) {
			return d.Header(), out, nil
		}
		if err != nil {
			return d.Header(), out, err
		}
		s.Xids = append([]uint32(nil), s.Xids...)
		out = append(out, s)
	}
}

func TestRoundTrip(t *testing.T) {
	h := history()
	data := encode(t, h)
	hdr, got, err := decodeAll(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Header{GPU: 3, Start: t0, Interval: 30 * time.Second, Samples: len(h)}); hdr != want {
		t.Errorf("header = %+v, want %+v", hdr, want)
	}
	nanEqual := cmp.Comparer(func(a, b float32) bool { return a == b || (a != a && b != b) })
	if diff := cmp.Diff(h, got, nanEqual, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("decoded samples differ (-want +got):\n%s", diff)
	}
	if len(data) > 200*3 {
		t.Errorf("%d bytes for 200 samples: runs and deltas should keep it near 2 per sample", len(data))
	}
}

func TestEncoderRejectsOffGrid(t *testing.T) {
	e := NewEncoder(0, t0, 30*time.Second)
	s := predict.Sample{Time: t0.Add(10 * time.Second)}
	if err := e.Add(&s); err == nil || !strings.Contains(err.Error(), "grid") {
		t.Errorf("off-grid sample: err = %v, want a grid error", err)
	}
}

func TestDecoderErrorsNameTheSpot(t *testing.T) {
	data := encode(t, history())
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not a trace", []byte("hello"), "not a trace file"},
		{"bad version", append([]byte(Magic), 9), "version 9"},
		{"truncated", data[:len(data)-3], "sample"},
		{"trailing bytes", append(append([]byte(nil), data...), 1, 2), "after the 200"},
	} {
		_, _, err := decodeAll(tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(f, history()))
	f.Add([]byte(Magic + "\x01\x00\x00\x1e\x02\x00\x05"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := NewDecoder(data)
		if err != nil {
			return
		}
		// A header may announce millions of samples that a short run record
		// repeats; reading 64 Ki of them shows the decoder holds up.
		var s predict.Sample
		for i := 0; i <= d.Header().Samples; i++ {
			if err := d.Next(&s); err != nil {
				return
			}
			if len(s.Xids) > MaxXidsPerSample {
				t.Fatalf("%d xids in one sample", len(s.Xids))
			}
			if i == 1<<16 {
				return
			}
		}
		t.Fatalf("Next returned more samples than the header's %d", d.Header().Samples)
	})
}
