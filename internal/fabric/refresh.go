package fabric

import (
	"bytes"
	"context"
	"errors"
	"syscall"
)

// errGone is what kernfs answers a read of a held file whose node was
// removed: the device went away after the listing that showed it.
var errGone error = syscall.ENODEV

// textFile is a port's state, phys_state or rate, with the content it
// last parsed (trimmed, as printable returns it) and the result, so that
// an unchanged attribute costs no allocation: the same val string and
// rate pointer go into each Snapshot, which is safe because neither is
// ever written to again (a changed rate gets a new pointer).
type textFile struct {
	file
	exists bool // the port has the attribute
	isRate bool // rate, parsed into rate; else a state, parsed into val
	ok     bool // raw parsed without error
	raw    string
	val    string
	rate   *float64
}

// parse sets t from the file's content b.
func (t *textFile) parse(b []byte) error {
	if t.ok && string(bytes.TrimSpace(b)) == t.raw {
		return nil
	}
	t.ok = false
	raw, err := printable(b)
	if err != nil {
		return err
	}
	if t.isRate {
		rate, err := parseRate(raw)
		if err != nil {
			return err
		}
		t.rate = &rate
	} else if t.val, err = parseState(raw); err != nil {
		return err
	}
	t.ok, t.raw = true, raw
	return nil
}

// refresh reads a cached device: only its files, into a new Device, with
// new Ports and counter maps; the analyzer keeps a Snapshot's maps for
// the next delta, so no map is ever reused. stale says a held file
// answered ENODEV.
func (r *reader) refresh(ctx context.Context, c *devCache) (d Device, stale bool, err error) {
	d = c.info
	x := &devRead{d: &d}
	d.Ports = make([]Port, len(c.ports))
	for i := range c.ports {
		if err := ctx.Err(); err != nil {
			return d, false, err
		}
		d.Ports[i] = r.readPort(&c.ports[i], x)
	}
	d.HWCounters = r.readCounters(c.hw, "hw_counters/", x)
	return d, x.stale, nil
}

func (r *reader) readPort(pc *portCache, x *devRead) Port {
	p := Port{Num: pc.num, LinkLayer: pc.linkLayer}
	if r.readText(&pc.state, pc.rel, x) {
		p.State = pc.state.val
	}
	if r.readText(&pc.physState, pc.rel, x) {
		p.PhysState = pc.physState.val
	}
	if r.readText(&pc.rate, pc.rel, x) {
		p.RateGbps = pc.rate.rate
	}
	if pc.counters != nil {
		p.Counters = r.readCounters(pc.counters, pc.countersRel, x)
	}
	if pc.hw != nil {
		p.HWCounters = r.readCounters(pc.hw, pc.hwRel, x)
	}
	return p
}

// readText reads t again if the port has it and reports whether it
// parsed.
func (r *reader) readText(t *textFile, rel string, x *devRead) bool {
	if !t.exists {
		return false
	}
	b, err := r.reread(&t.file)
	if err == nil {
		err = t.parse(b)
	}
	if err != nil {
		if !notExposed(err) {
			x.fail(rel, t.name, err)
		}
		return false
	}
	return true
}

// readCounters reads files again into a new map; nil when none read.
func (r *reader) readCounters(files []file, rel string, x *devRead) map[string]uint64 {
	if len(files) == 0 {
		return nil
	}
	m := make(map[string]uint64, len(files))
	for i := range files {
		f := &files[i]
		b, err := r.reread(f)
		if err == nil {
			err = counter(m, f.name, b)
		}
		if err != nil && !notExposed(err) && !errors.Is(err, errNotAvailable) {
			x.fail(rel, f.name, err)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
