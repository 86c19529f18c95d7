package kmsg

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseRecord(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Record
	}{{
		name: "fixture line",
		line: "6,3964,206764307,-;nvidia-nvswitch2: open (major=510)",
		want: Record{Seq: 3964, HasSeq: true, Priority: 6, Facility: 0, Monotonic: 206764307 * time.Microsecond,
			HasMonotonic: true, Message: "nvidia-nvswitch2: open (major=510)", Source: SourceKmsg},
	}, {
		name: "multi-line record as the sim writes it",
		line: `4,7,14387209961,-;NVRM: The NVIDIA GPU 0000:5d:00.0\x0aNVRM: (PCI ID: 10de:2330) installed in this system has\x0aNVRM: fallen off the bus and is not responding to commands.`,
		want: Record{Seq: 7, HasSeq: true, Priority: 4, Monotonic: 14387209961 * time.Microsecond, HasMonotonic: true,
			Message: "NVRM: The NVIDIA GPU 0000:5d:00.0\nNVRM: (PCI ID: 10de:2330) installed in this system has\nNVRM: fallen off the bus and is not responding to commands.",
			Source:  SourceKmsg},
	}, {
		name: "escapes, invalid UTF-8 replaced",
		line: `6,0,5,-;a\x5cb\x09c\xffd`,
		want: Record{HasSeq: true, Priority: 6, Monotonic: 5 * time.Microsecond, HasMonotonic: true,
			Message: "a\\b\tc\uFFFDd", Source: SourceKmsg},
	}, {
		name: "escaped UTF-8 decodes",
		line: `6,1,5,-;caf\xc3\xa9 \x`,
		want: Record{Seq: 1, HasSeq: true, Priority: 6, Monotonic: 5 * time.Microsecond, HasMonotonic: true,
			Message: `café \x`, Source: SourceKmsg},
	}, {
		name: "facility, caller field, continuation flag, dictionary",
		line: "14,99,1000000,c,caller=T123;hello; world\n SUBSYSTEM=pci\n DEVICE=+pci:0000:00:01.0\n",
		want: Record{Seq: 99, HasSeq: true, Priority: 6, Facility: 1, Monotonic: time.Second, HasMonotonic: true,
			Message: "hello; world", Continued: true, Source: SourceKmsg},
	}, {
		name: "empty message",
		line: "3,5,0,+;",
		want: Record{Seq: 5, HasSeq: true, Priority: 3, HasMonotonic: true, Continued: true, Source: SourceKmsg},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRecord([]byte(tc.line))
			if err != nil {
				t.Fatalf("ParseRecord: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseRecord (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRecordErrors(t *testing.T) {
	tests := []struct{ line, wantErr string }{
		{"", "empty record"},
		{"6,3964,206764307,-", "no ';'"},
		{"6,3964,2067", "no ';'"}, // truncated
		{"6,3964;msg", `has 2 fields`},
		{"x,1,2,-;msg", `priority field "x"`},
		{"1024,1,2,-;msg", `priority field "1024"`},
		{"6,-1,2,-;msg", `seq field "-1"`},
		{"6,99999999999999999999,2,-;msg", `seq field "99999999999999999999"`},
		{"6,1,2.5,-;msg", `usec field "2.5"`},
		{"6,1,9223372036854776,-;msg", `usec field`},
		{"6,1,2,x;msg", `flags field "x"`},
		{"6,1,2,;msg", `flags field ""`},
		{"6,1,2,--;msg", `flags field "--"`},
		{"6,1,2," + strings.Repeat("-", 1000) + ";m", `flags field "----`},
	}
	for _, tc := range tests {
		_, err := ParseRecord([]byte(tc.line))
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseRecord(%.40q) = %v, want error containing %q", tc.line, err, tc.wantErr)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("ParseRecord(%.40q): error is %d bytes long", tc.line, len(err.Error()))
		}
	}
}
