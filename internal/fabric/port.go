package fabric

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
)

// port reads ports/<num>. Its failures go to the device's Errors through
// fail.
func (r *reader) port(ports *os.File, num int, fail func(string, error)) Port {
	p := Port{Num: num}
	rel := "ports/" + strconv.Itoa(num) + "/"
	f, err := openDirAt(ports, strconv.Itoa(num))
	if err != nil {
		fail(rel[:len(rel)-1], err)
		return p
	}
	defer func() { _ = f.Close() }()
	field := func(file string, set func(string) error) {
		v, err := r.text(f, file)
		if err == nil {
			err = set(v)
		}
		if err != nil && !notExposed(err) {
			fail(rel+file, err)
		}
	}
	field("state", func(v string) (err error) { p.State, err = parseState(v); return err })
	field("phys_state", func(v string) (err error) { p.PhysState, err = parseState(v); return err })
	field("rate", func(v string) error {
		rate, err := parseRate(v)
		if err == nil {
			p.RateGbps = &rate
		}
		return err
	})
	field("link_layer", func(v string) error { p.LinkLayer = v; return nil })
	p.Counters = r.counters(f, "counters", rel+"counters", fail)
	p.HWCounters = r.counters(f, "hw_counters", rel+"hw_counters", fail)
	return p
}

// counters reads every file of the counters/ or hw_counters/ directory
// name below parent, rel naming it in errors. A missing directory is nil
// (EFA has no counters/: it answers no performance-management MADs). A file that says N/A (a device without a
// PMA) or that the kernel refuses to read (EINVAL when the MAD fails) is
// left out: absent, never 0.
func (r *reader) counters(parent *os.File, name, rel string, fail func(string, error)) map[string]uint64 {
	f, err := openDirAt(parent, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			fail(rel, err)
		}
		return nil
	}
	defer func() { _ = f.Close() }()
	entries, err := list(f, maxCounters)
	if err != nil {
		fail(rel, err)
	}
	if len(entries) == 0 {
		return nil
	}
	m := make(map[string]uint64, len(entries))
	for _, e := range entries {
		name := e.Name()
		// lifespan is no counter: it is how many milliseconds the kernel
		// caches hw_counters values, a setting.
		if name == "lifespan" {
			continue
		}
		// The listing already says what each entry is (sysfs gives its
		// type), which spares a stat per counter.
		if !e.Type().IsRegular() {
			fail(rel+"/"+name, errNotAttr)
			continue
		}
		b, err := r.attr(f, name, true)
		if err != nil {
			if !notExposed(err) {
				fail(rel+"/"+name, err)
			}
			continue
		}
		v, err := parseCounter(b)
		if err != nil {
			if !errors.Is(err, errNotAvailable) {
				fail(rel+"/"+name, err)
			}
			continue
		}
		m[name] = v
	}
	if len(m) == 0 {
		return nil // all N/A: as absent as no directory
	}
	return m
}

// listPorts opens dev's ports/ and lists it by number. A name that is no
// port number is an error, not a reason to give up on the other ports.
func listPorts(dev *os.File) (*os.File, []int, error) {
	ports, err := openDirAt(dev, "ports")
	if err != nil {
		return nil, nil, err
	}
	entries, err := list(ports, maxPorts)
	var nums []int
	for _, e := range entries {
		n := e.Name()
		num, perr := strconv.Atoi(n)
		if perr != nil || num < 0 || num > 255 || strconv.Itoa(num) != n {
			err = errors.Join(err, errors.New("not a port number: "+strconv.Quote(clip(n))))
			continue
		}
		nums = append(nums, num)
	}
	slices.Sort(nums)
	return ports, nums, err
}

// list returns the entries of the open directory f sorted by name, at
// most max of them: past max it returns those it read first and an error
// saying there were more.
func list(f *os.File, max int) ([]fs.DirEntry, error) {
	entries, err := f.ReadDir(max + 1)
	if err != nil && len(entries) == 0 {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	err = nil
	if len(entries) > max {
		entries = entries[:max]
		err = errors.New("more than " + strconv.Itoa(max) + " entries; read " + strconv.Itoa(max))
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
