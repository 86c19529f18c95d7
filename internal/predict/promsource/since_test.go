package promsource

import (
	"strings"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in, want, err string
	}{
		{"30d", "2026-03-01T12:00:00Z", ""},
		{"1w", "2026-03-24T12:00:00Z", ""},
		{"1d12h", "2026-03-30T00:00:00Z", ""},
		{"90m", "2026-03-31T10:30:00Z", ""},
		{"2026-01-02T03:04:05+01:00", "2026-01-02T02:04:05Z", ""},
		{"0", "", "above zero"},
		{"30 days", "", "RFC 3339"},
		{"-1d", "", "RFC 3339"},
		{"", "", "RFC 3339"},
	} {
		got, err := ParseTime(tc.in, now)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTime(%q) = %s, %v; want an error mentioning %q", tc.in, got, err, tc.err)
			}
		case err != nil || got.UTC().Format(time.RFC3339) != tc.want:
			t.Errorf("ParseTime(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"30d", "1y2w3d4h5m6s7ms", "2026-01-02T03:04:05Z", "0", "9999999999999y"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s, now)
		if err != nil {
			return
		}
		if got.IsZero() {
			t.Fatalf("ParseTime(%q) = the zero time without an error", s)
		}
		if s != "" && s[0] >= '0' && s[0] <= '9' && !strings.Contains(s, "-") && !got.Before(now) {
			t.Fatalf("ParseTime(%q) = %s: a duration must reach back before now", s, got)
		}
	})
}
