package procs

import (
	"net"
	"strconv"
	"testing"
)

// The address is on loopback, below the kernel's ephemeral range (where no
// outgoing connection takes it meanwhile), and free: it can be listened on.
func TestFreeLoopbackAddrIsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		addr, err := FreeLoopbackAddr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(port)
		if host != "127.0.0.1" || n >= low || n < 1024 {
			t.Fatalf("address %s: want 127.0.0.1 and a port below the ephemeral range's %d", addr, low)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listening on %s: %v", addr, err)
		}
		_ = l.Close()
	}
}
