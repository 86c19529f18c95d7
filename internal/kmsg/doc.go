// Package kmsg reads kernel-log records: raw /dev/kmsg records, the text
// forms of dmesg (plain, -T, --time-format iso, --decode), syslog files
// and journalctl -k output. It only reads; turning messages into findings
// is another package's job.
//
// The entry points, by where the log comes from:
//
//	ParseRecord, ParseTextLine  one record or line
//	NewReader                   any stream: a file, stdin, a pipe from dmesg
//	OpenDevice, NewDevice       /dev/kmsg itself, one record per read(2)
//	Follow, NewFollower         a growing file, like tail -F
//
// Every reader auto-detects raw records and each text form line by line,
// so a stream may mix them. Readers never panic and never buffer more
// than Options.MaxLineBytes of one line: what they cannot use (over-long
// lines, binary garbage, broken records) is skipped and counted in Stats,
// because a node agent must keep reading whatever the file holds.
//
// Position, LoadPosition, SavePosition and ResumeFilter let an agent
// resume after a restart without reporting a record twice or skipping
// one: within a boot the kernel's sequence numbers only grow, and a new
// boot (a new boot id) starts over.
package kmsg
