package kmsg

import (
	"time"

	"k8s.io/utils/clock"
)

// Options configure parsing and reading. The zero value is ready to use;
// each field says which entry points read it.
type Options struct {
	// Clock gives the year of syslog stamps that lack one and drives
	// Follow's polling. Default clock.RealClock{}.
	Clock clock.WithTicker
	// Location is the zone of stamps that carry none (dmesg -T, BSD
	// syslog), which is the zone of the machine that printed them.
	// Default time.Local.
	Location *time.Location
	// Year is the year of BSD syslog stamps ("Feb 23 16:24:18"). 0 means
	// the clock's current year, or the year before when that would put
	// the stamp more than a day in the future (a log read in January).
	Year int
	// BootTime, when set, gives records that only carry a monotonic time
	// (raw records, plain dmesg) a wall time: BootTime + Monotonic. The
	// kernel's clock stops during suspend, so this is approximate.
	BootTime time.Time
	// MaxLineBytes bounds one line and one joined record (default 64 KiB,
	// at least 16). Longer lines are skipped and counted in Stats.TooLong.
	MaxLineBytes int
	// SplitSameStamp keeps text lines whose message starts with
	// whitespace as records of their own, as /dev/kmsg has them. By
	// default they are joined to the record before them when the stamp is
	// the same (a call trace under its "Call Trace:" line).
	SplitSameStamp bool
	// Resume, when set, skips the records it already covers (see
	// ResumeFilter), comparing Resume.BootID with BootID. Skipped records
	// are counted in Stats.Filtered; a gap after the resume point (the
	// ring overwrote records while nobody read) counts as Stats.Lost.
	Resume *Position
	// BootID is the current boot's id (ReadBootID); used with Resume.
	BootID string
	// Start is where OpenDevice begins in the kernel's ring.
	Start Start
	// PollInterval is how often Follow looks for new data (default 1s).
	PollInterval time.Duration
	// FromEnd makes Follow skip what the file holds when it is first
	// opened, like tail -f; files that appear later are read whole.
	FromEnd bool
}

const (
	defaultMaxLine      = 64 << 10
	minMaxLine          = 16
	defaultPollInterval = time.Second
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = defaultMaxLine
	}
	o.MaxLineBytes = max(o.MaxLineBytes, minMaxLine)
	if o.PollInterval <= 0 {
		o.PollInterval = defaultPollInterval
	}
	return o
}

// Stats count what a reader saw. Lines counts every input line (or, for
// a device, every read); the other counters say what became of them.
type Stats struct {
	Lines   int // lines read, including skipped ones
	Records int // records returned
	// Skipped counts lines that held no usable record: broken raw
	// records and binary garbage. Blank lines and the dictionary lines
	// of raw records are expected, so they are not counted.
	Skipped     int
	TooLong     int // lines over MaxLineBytes, dropped unread
	InvalidUTF8 int // lines whose invalid UTF-8 was replaced with U+FFFD
	NotKernel   int // syslog lines of other programs, dropped
	Filtered    int // records Options.Resume already covered
	// Lost counts records the sequence numbers say are missing: the
	// ring overwrote them, or a file lacks them.
	Lost int
	// Reordered counts records whose sequence number is not after the
	// one before within a boot (duplicates included). They are returned.
	Reordered int
	// Overruns counts EPIPE from /dev/kmsg: the ring overwrote records
	// before they were read (their number is in Lost).
	Overruns int
}
