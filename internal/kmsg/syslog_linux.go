package kmsg

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// OpenSyslog returns a Syslog of this kernel's ring buffer, sized as the
// kernel reports it. It fails when the caller may not read the ring
// (neither CAP_SYSLOG nor kernel.dmesg_restrict=0).
func OpenSyslog(opts Options) (*Syslog, error) {
	size, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil {
		return nil, fmt.Errorf("asking syslog(2) for the kernel log's size (needs CAP_SYSLOG): %w", err)
	}
	read := func(b []byte) (int, error) { return unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, b) }
	if _, err := read(make([]byte, 1)); err != nil {
		return nil, fmt.Errorf("reading the kernel log through syslog(2) (needs CAP_SYSLOG): %w", err)
	}
	return NewSyslog(read, size, opts), nil
}
