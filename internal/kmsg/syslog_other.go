//go:build !linux

package kmsg

import "errors"

// OpenSyslog fails: only Linux has the kernel's syslog(2).
func OpenSyslog(Options) (*Syslog, error) {
	return nil, errors.New("reading the kernel log through syslog(2) needs Linux")
}
