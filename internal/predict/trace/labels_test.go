package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLabelsAt(t *testing.T) {
	m := &Manifest{GPUs: 2, Failures: []Failure{
		{GPU: 1, Time: t0.Add(10 * time.Hour), RepairedAt: t0.Add(12 * time.Hour)},
		{GPU: 1, Time: t0.Add(2 * time.Hour), RepairedAt: t0.Add(3 * time.Hour)},
		{GPU: 0, Time: t0.Add(time.Hour), RepairedAt: t0.Add(2 * time.Hour)},
	}}
	l := m.LabelsFor(1)
	for _, tc := range []struct {
		at            time.Duration
		out, replaced bool
		next          time.Duration // 0: none
	}{
		{0, false, false, 2 * time.Hour},
		{2 * time.Hour, true, false, 2 * time.Hour},
		{3 * time.Hour, false, true, 10 * time.Hour},
		{4 * time.Hour, false, false, 10 * time.Hour},
		{11 * time.Hour, true, false, 10 * time.Hour},
		{12 * time.Hour, false, true, 0},
	} {
		out, replaced, next := l.At(t0.Add(tc.at))
		var got time.Duration
		if next != nil {
			got = next.Time.Sub(t0)
		}
		if out != tc.out || replaced != tc.replaced || got != tc.next {
			t.Errorf("at %s: out %v replaced %v next %s, want %v %v %s", tc.at, out, replaced, got, tc.out, tc.replaced, tc.next)
		}
	}
}

func TestManifestRoundTripAndChecks(t *testing.T) {
	dir := t.TempDir()
	pre := t0.Add(30 * time.Minute)
	m := &Manifest{Format: ManifestFormat, Version: ManifestVersion, GPUs: 2, IntervalSeconds: 30, Start: t0,
		Failures: []Failure{{GPU: 1, Time: t0.Add(time.Hour), RepairedAt: t0.Add(2 * time.Hour), Class: "x", PrecursorStart: &pre}}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Failures) != 1 || !got.Failures[0].PrecursorStart.Equal(pre) {
		t.Errorf("read back %+v", got.Failures)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`"gpu": 1`, `"gpu": 5`, "failures[0].gpu 5"},
		{`"version": 1`, `"version": 3`, "version 3"},
		{`"intervalSeconds": 30`, `"intervalSeconds": 0`, "intervalSeconds 0"},
		{`"format": "gpuheal-fleet-trace"`, `"format": "csv"`, `format "csv"`},
	} {
		data, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
		_, err := ParseManifest([]byte(strings.Replace(string(data), tc.old, tc.new, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: err = %v, want it to name %q", tc.old, tc.new, err, tc.want)
		}
	}
}
