package kmsg

// parseDecode parses dmesg --decode's "kern  :warn  : " (printf
// "%-6s:%-6s: ", so long names like authpriv are not padded).
func parseDecode(b []byte) (fac, lvl, n int, ok bool) {
	i := 0
	for i < len(b) && (isLower(b[i]) || isDigit(b[i])) {
		i++
	}
	if fac = facility(b[:i]); fac < 0 {
		return 0, 0, 0, false
	}
	if i = skipSpaces(b, i); i >= len(b) || b[i] != ':' {
		return 0, 0, 0, false
	}
	j := i + 1
	for i = j; i < len(b) && isLower(b[i]); {
		i++
	}
	if lvl = level(b[j:i]); lvl < 0 {
		return 0, 0, 0, false
	}
	if i = skipSpaces(b, i); i >= len(b) || b[i] != ':' {
		return 0, 0, 0, false
	}
	i++
	if i < len(b) && b[i] == ' ' {
		i++
	}
	return fac, lvl, i, true
}

// facility maps util-linux's facility names to numbers, -1 if unknown.
func facility(b []byte) int {
	switch string(b) {
	case "kern":
		return 0
	case "user":
		return 1
	case "mail":
		return 2
	case "daemon":
		return 3
	case "auth":
		return 4
	case "syslog":
		return 5
	case "lpr":
		return 6
	case "news":
		return 7
	case "uucp":
		return 8
	case "cron":
		return 9
	case "authpriv":
		return 10
	case "ftp":
		return 11
	}
	if len(b) == 6 && string(b[:5]) == "local" && '0' <= b[5] && b[5] <= '7' {
		return 16 + int(b[5]-'0')
	}
	return -1
}

func level(b []byte) int {
	switch string(b) {
	case "emerg":
		return 0
	case "alert":
		return 1
	case "crit":
		return 2
	case "err":
		return 3
	case "warn":
		return 4
	case "notice":
		return 5
	case "info":
		return 6
	case "debug":
		return 7
	}
	return -1
}

// parseSyslogTail parses what follows a syslog stamp: "host tag: " or
// "host tag[pid]: ". It returns the tag and the offset of the message.
// A tag must be followed by ": " (or end the line), which keeps kernel
// messages such as "pcieport 0000:00:01.0: AER: …" from looking like
// syslog lines of a program called 0000.
func parseSyslogTail(b []byte) (tag []byte, pid bool, n int, ok bool) {
	i := 0
	for i < len(b) && b[i] != ' ' {
		i++
	}
	if i == 0 || i >= len(b) {
		return nil, false, 0, false
	}
	i++
	start := i
	for i < len(b) && b[i] != ':' && b[i] != '[' && b[i] != ' ' {
		i++
	}
	if i == start {
		return nil, false, 0, false
	}
	tag = b[start:i]
	if i < len(b) && b[i] == '[' {
		_, j, ok := digits(b, i+1, 20)
		if !ok || j >= len(b) || b[j] != ']' {
			return nil, false, 0, false
		}
		pid, i = true, j+1
	}
	if i >= len(b) || b[i] != ':' {
		return nil, false, 0, false
	}
	i++
	if i < len(b) {
		if b[i] != ' ' {
			return nil, false, 0, false
		}
		i++
	}
	return tag, pid, i, true
}

func skipSpaces(b []byte, i int) int {
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
