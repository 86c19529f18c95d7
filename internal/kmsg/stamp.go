package kmsg

import (
	"time"
)

// The prefix parsers below are written by hand, not with regexps or
// time.Parse: they run once per line and a reader must keep up with
// millions of lines a second. Each takes the bytes where the prefix
// should start and returns how many it used, or ok=false.

// parseMono parses dmesg's "[12345.678901]", padded "[   12.345678]" too.
func parseMono(b []byte) (d time.Duration, n int, ok bool) {
	if len(b) < 4 || b[0] != '[' {
		return 0, 0, false
	}
	i := 1
	for i < len(b) && b[i] == ' ' {
		i++
	}
	secs, i, ok := digits(b, i, 10)
	if !ok || secs > 9_000_000_000 || i >= len(b) || b[i] != '.' {
		return 0, 0, false
	}
	start := i + 1
	frac, i, ok := digits(b, start, 9)
	if !ok || i >= len(b) || b[i] != ']' {
		return 0, 0, false
	}
	for k := i - start; k < 9; k++ {
		frac *= 10
	}
	return time.Duration(secs)*time.Second + time.Duration(frac), i + 1, true
}

// parseCtime parses dmesg -T's "[Sun Feb 23 16:24:18 2025]"; the day is
// space-padded ("Feb  3") as ctime(3) prints it.
func parseCtime(b []byte, loc *time.Location) (time.Time, int, bool) {
	if len(b) < 25 || b[0] != '[' || !isLetter(b[1]) || b[4] != ' ' || b[8] != ' ' {
		return time.Time{}, 0, false
	}
	mon := month(b[5:8])
	i := 9
	if b[i] == ' ' {
		i++
	}
	day, i, ok := digits(b, i, 2)
	if !ok || i >= len(b) || b[i] != ' ' {
		return time.Time{}, 0, false
	}
	h, m, s, i, ok := clockTime(b, i+1)
	if !ok || mon == 0 || i >= len(b) || b[i] != ' ' {
		return time.Time{}, 0, false
	}
	year, ok := fixed(b, i+1, 4)
	if i += 5; !ok || i >= len(b) || b[i] != ']' {
		return time.Time{}, 0, false
	}
	return time.Date(int(year), mon, int(day), h, m, s, 0, loc), i + 1, true
}

// parseBSD parses a BSD syslog stamp, "Feb 23 16:24:18" or "Feb  3 …",
// which has no year and no zone.
func parseBSD(b []byte, year int, loc *time.Location) (time.Time, int, bool) {
	if len(b) < 15 || b[3] != ' ' {
		return time.Time{}, 0, false
	}
	mon := month(b[:3])
	i := 4
	if b[i] == ' ' {
		i++
	}
	day, i, ok := digits(b, i, 2)
	if !ok || mon == 0 || i >= len(b) || b[i] != ' ' {
		return time.Time{}, 0, false
	}
	h, m, s, i, ok := clockTime(b, i+1)
	if !ok {
		return time.Time{}, 0, false
	}
	return time.Date(year, mon, int(day), h, m, s, 0, loc), i, true
}

// isoStamp is the parts of "2025-02-23T16:24:18,123456+00:00"; the zone
// is left to the caller, which caches *time.Location values.
type isoStamp struct {
	year, mon, day, h, m, s, nsec int
	sep                           byte // ',' (dmesg), '.' or 0 (syslog, journal)
	hasZone                       bool
	zoneSecs                      int
}

func parseISO(b []byte) (st isoStamp, n int, ok bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || b[10] != 'T' {
		return st, 0, false
	}
	y, ok1 := fixed(b, 0, 4)
	mo, ok2 := fixed(b, 5, 2)
	d, ok3 := fixed(b, 8, 2)
	h, m, s, i, ok4 := clockTime(b, 11)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return st, 0, false
	}
	st = isoStamp{year: int(y), mon: int(mo), day: int(d), h: h, m: m, s: s}
	if i < len(b) && (b[i] == ',' || b[i] == '.') {
		st.sep = b[i]
		start := i + 1
		var frac uint64
		if frac, i, ok = digits(b, start, 9); !ok {
			return st, 0, false
		}
		for k := i - start; k < 9; k++ {
			frac *= 10
		}
		st.nsec = int(frac)
	}
	if i < len(b) && b[i] == 'Z' {
		st.hasZone = true
		i++
	} else if i < len(b) && (b[i] == '+' || b[i] == '-') {
		sign := 1
		if b[i] == '-' {
			sign = -1
		}
		zh, ok := fixed(b, i+1, 2)
		j := i + 3
		if j < len(b) && b[j] == ':' {
			j++
		}
		zm, ok2 := fixed(b, j, 2)
		if !ok || !ok2 {
			return st, 0, false
		}
		st.hasZone, st.zoneSecs, i = true, sign*int(zh*3600+zm*60), j+2
	}
	if i < len(b) && b[i] != ' ' {
		return st, 0, false
	}
	return st, i, true
}

// clockTime parses "HH:MM:SS" at b[i:].
func clockTime(b []byte, i int) (h, m, s, n int, ok bool) {
	if i+8 > len(b) || b[i+2] != ':' || b[i+5] != ':' {
		return 0, 0, 0, 0, false
	}
	hh, ok1 := fixed(b, i, 2)
	mm, ok2 := fixed(b, i+3, 2)
	ss, ok3 := fixed(b, i+6, 2)
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 60 {
		return 0, 0, 0, 0, false
	}
	return int(hh), int(mm), int(ss), i + 8, true
}

// digits reads 1 to limit decimal digits at b[i:].
func digits(b []byte, i, limit int) (v uint64, n int, ok bool) {
	start := i
	for i < len(b) && i-start < limit && '0' <= b[i] && b[i] <= '9' {
		v = v*10 + uint64(b[i]-'0')
		i++
	}
	return v, i, i > start
}

// fixed reads exactly n decimal digits at b[i:].
func fixed(b []byte, i, n int) (uint64, bool) {
	if i < 0 || i+n > len(b) {
		return 0, false
	}
	v, j, ok := digits(b, i, n)
	return v, ok && j == i+n
}

func month(b []byte) time.Month {
	switch string(b) {
	case "Jan":
		return time.January
	case "Feb":
		return time.February
	case "Mar":
		return time.March
	case "Apr":
		return time.April
	case "May":
		return time.May
	case "Jun":
		return time.June
	case "Jul":
		return time.July
	case "Aug":
		return time.August
	case "Sep":
		return time.September
	case "Oct":
		return time.October
	case "Nov":
		return time.November
	case "Dec":
		return time.December
	}
	return 0
}

func isLetter(c byte) bool { return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }
