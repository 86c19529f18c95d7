package kmsg

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
)

// textRec is a record as ParseTextLine returns it before the fields a
// test sets.
func textRec(src, msg string) Record {
	return Record{Priority: -1, Facility: -1, Source: src, Message: msg}
}

func TestParseTextLine(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC))
	opts := Options{Clock: clk, Location: time.UTC}
	utc := func(y int, mo time.Month, d, h, m, s, ns int) time.Time {
		return time.Date(y, mo, d, h, m, s, ns, time.UTC)
	}
	const xid = "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s"
	with := func(r Record, f func(*Record)) Record { f(&r); return r }
	mono := func(d time.Duration) func(*Record) {
		return func(r *Record) { r.Monotonic, r.HasMonotonic = d, true }
	}
	tests := []struct {
		name string
		line string
		opts *Options
		want Record
	}{
		{"dmesg", "[12345.678901] " + xid, nil, with(textRec(SourceDmesg, xid), mono(12345678901*time.Microsecond))},
		{"dmesg padded", "[   12.345678] usb 1-1: new device", nil, with(textRec(SourceDmesg, "usb 1-1: new device"), mono(12345678*time.Microsecond))},
		{"dmesg keeps leading space of message", "[    1.000000]  show_stack+0x52/0x5c", nil, with(textRec(SourceDmesg, " show_stack+0x52/0x5c"), mono(time.Second))},
		{"dmesg empty message", "[    1.000000]", nil, with(textRec(SourceDmesg, ""), mono(time.Second))},
		{"dmesg -r", "<4>[  206.764307] " + xid, nil, with(textRec(SourceDmesg, xid), func(r *Record) {
			mono(206764307 * time.Microsecond)(r)
			r.Priority, r.Facility = 4, 0
		})},
		{"/proc/kmsg without stamp", "<14>hello", nil, with(textRec(SourceDmesg, "hello"), func(r *Record) { r.Priority, r.Facility = 6, 1 })},
		{"dmesg -T", "[Sun Feb 23 16:24:18 2025] " + xid, nil, with(textRec(SourceDmesgT, xid), func(r *Record) { r.Time = utc(2025, 2, 23, 16, 24, 18, 0) })},
		{"dmesg -T padded day", "[Mon Feb  3 06:04:08 2025] x", nil, with(textRec(SourceDmesgT, "x"), func(r *Record) { r.Time = utc(2025, 2, 3, 6, 4, 8, 0) })},
		{"iso comma", "2025-02-23T16:24:18,123456+00:00 " + xid, nil, with(textRec(SourceISO, xid), func(r *Record) { r.Time = utc(2025, 2, 23, 16, 24, 18, 123456000) })},
		{"iso dot, zone", "2025-02-23T17:24:18.5+01:00 pcieport 0000:00:01.0: AER: x", nil, with(textRec(SourceISO, "pcieport 0000:00:01.0: AER: x"), func(r *Record) { r.Time = utc(2025, 2, 23, 16, 24, 18, 5e8) })},
		{"iso dot, ambiguous, taken as kernel", "2025-02-23T16:24:18.5Z usb usb1: New USB device", nil, with(textRec(SourceISO, "usb usb1: New USB device"), func(r *Record) { r.Time = utc(2025, 2, 23, 16, 24, 18, 5e8) })},
		{"decode", "kern  :warn  : " + xid, nil, with(textRec(SourceDecode, xid), func(r *Record) { r.Priority, r.Facility = 4, 0 })},
		{"decode with mono", "kern  :err   : [12345.678901] " + xid, nil, with(textRec(SourceDecode, xid), func(r *Record) {
			mono(12345678901 * time.Microsecond)(r)
			r.Priority, r.Facility = 3, 0
		})},
		{"decode with iso", "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 oom-kill:constraint=OTHER_CONSTRAINT", nil, with(textRec(SourceDecode, "oom-kill:constraint=OTHER_CONSTRAINT"), func(r *Record) {
			r.Priority, r.Facility, r.Time = 4, 0, utc(2025, 1, 21, 4, 41, 44, 283302000)
		})},
		{"decode with ctime, long facility", "authpriv:info  : [Sun Feb 23 16:24:18 2025] x", nil, with(textRec(SourceDecode, "x"), func(r *Record) {
			r.Priority, r.Facility, r.Time = 6, 10, utc(2025, 2, 23, 16, 24, 18, 0)
		})},
		{"syslog", "Feb 23 16:24:18 gpu-node-7 kernel: [12345.678901] " + xid, nil, with(textRec(SourceSyslog, xid), func(r *Record) {
			mono(12345678901 * time.Microsecond)(r)
			r.Time = utc(2025, 2, 23, 16, 24, 18, 0)
		})},
		{"journalctl -k", "Feb  3 16:24:18 gpu-node-7 kernel: " + xid, nil, with(textRec(SourceJournal, xid), func(r *Record) { r.Time = utc(2025, 2, 3, 16, 24, 18, 0) })},
		{"syslog year from options", "Dec 31 23:59:59 h kernel: x", &Options{Year: 2019, Location: time.UTC}, with(textRec(SourceJournal, "x"), func(r *Record) { r.Time = utc(2019, 12, 31, 23, 59, 59, 0) })},
		{"syslog from December read in January", "Dec 31 23:59:59 h kernel: x", nil, with(textRec(SourceJournal, "x"), func(r *Record) { r.Time = utc(2024, 12, 31, 23, 59, 59, 0) })},
		{"rfc3339 syslog", "2025-02-23T16:24:18.123456+00:00 gpu-node-7 kernel: " + xid, nil, with(textRec(SourceJournal, xid), func(r *Record) { r.Time = utc(2025, 2, 23, 16, 24, 18, 123456000) })},
		{"journal short-iso", "2025-02-23T16:24:18+0000 gpu-node-7 kernel: [ 1.5] x", nil, with(textRec(SourceSyslog, "x"), func(r *Record) {
			mono(1500 * time.Millisecond)(r)
			r.Time = utc(2025, 2, 23, 16, 24, 18, 0)
		})},
		{"journal short-monotonic", "[12345.678901] gpu-node-7 kernel: x", nil, with(textRec(SourceJournal, "x"), mono(12345678901*time.Microsecond))},
		{"plain", "NVRM: GPU at PCI:0000:9b:00", nil, textRec(SourcePlain, "NVRM: GPU at PCI:0000:9b:00")},
		{"plain CRLF", "hello\r\n", nil, textRec(SourcePlain, "hello")},
		{"plain that looks like a stamp", "[12345] Feb x", nil, textRec(SourcePlain, "[12345] Feb x")},
		{"plain lower-case word with colon", "kernel: x", nil, textRec(SourcePlain, "kernel: x")},
		{"broken iso", "2025-02-23T16:24:18,x msg", nil, textRec(SourcePlain, "2025-02-23T16:24:18,x msg")},
		{"invalid UTF-8", "[    1.000000] a\xffb", nil, with(textRec(SourceDmesg, "a\uFFFDb"), mono(time.Second))},
		{"boot time gives wall time", "[   10.000000] x", &Options{BootTime: utc(2025, 1, 1, 0, 0, 0, 0)}, with(textRec(SourceDmesg, "x"), func(r *Record) {
			mono(10 * time.Second)(r)
			r.Time = utc(2025, 1, 1, 0, 0, 10, 0)
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := opts
			if tc.opts != nil {
				o = *tc.opts
				o.Clock = clk
				o.Location = time.UTC
			}
			got, ok := ParseTextLine([]byte(tc.line), o)
			if !ok {
				t.Fatalf("ParseTextLine(%q) = false", tc.line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTextLine(%q) (-want +got):\n%s", tc.line, diff)
			}
		})
	}
}

// Lines that are not kernel records: blank ones, and syslog lines of
// other programs.
func TestParseTextLineNotKernel(t *testing.T) {
	for _, line := range []string{
		"",
		"  \t ",
		"Feb 23 16:24:18 gpu-node-7 systemd[1]: Started Session 5.",
		"Feb 23 16:24:18 gpu-node-7 nvidia-persistenced: Verbose syslog connection opened",
		"Feb 23 16:24:18 gpu-node-7 -- MARK --",
		"2025-02-23T16:24:18.123456+00:00 gpu-node-7 containerd[812]: msg",
		"2025-02-23T16:24:18+0000 gpu-node-7 kubelet[1]: NVRM: Xid (PCI:0000:9b:00): 79, in a log line",
	} {
		if rec, ok := ParseTextLine([]byte(line), Options{}); ok {
			t.Errorf("ParseTextLine(%q) = %+v, true; want false", line, rec)
		}
	}
}
