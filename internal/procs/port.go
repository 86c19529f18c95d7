package procs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreeLoopbackAddr returns a loopback address ("127.0.0.1:port") that is
// free now, for a process started later to listen on. The port is taken
// from below the kernel's ephemeral range (ip_local_port_range): a port
// from inside it, as listening on :0 gives, can be taken in the meantime
// as the source port of any outgoing connection, and on a busy machine
// (tests opening thousands of connections to their API servers) it was.
func FreeLoopbackAddr() (string, error) {
	low := ephemeralLow()
	const floor = 10000
	if low <= floor+1000 {
		return listenAny() // an unusual range: the kernel's choice is all there is
	}
	for range 100 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(floor+rand.IntN(low-floor)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: try another
		}
		_ = l.Close()
		return addr, nil
	}
	return "", fmt.Errorf("no free loopback port found in %d..%d after 100 tries", floor, low-1)
}

func listenAny() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, 32768
// (Linux's default) when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 32768
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n < 1024 || n > 65535 {
		return 32768
	}
	return n
}
