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

// portCache is what a Reader keeps of a port: its number, its link
// layer (fixed while the device exists), and the files it reads again.
type portCache struct {
	num                    int
	rel                    string // "ports/1/", for errors, as the two below
	countersRel, hwRel     string // "ports/1/counters/", "ports/1/hw_counters/"
	linkLayer              string
	state, physState, rate textFile
	counters, hw           []file
}

// scanPort reads ports/<num> for the first time. Its failures go to the
// device's Errors through x.
func (r *reader) scanPort(ports *os.File, num int, x *devRead) (Port, portCache) {
	p := Port{Num: num}
	pc := portCache{num: num, rel: "ports/" + strconv.Itoa(num) + "/"}
	pc.countersRel, pc.hwRel = pc.rel+"counters/", pc.rel+"hw_counters/"
	f, err := openDirAt(ports, strconv.Itoa(num))
	if err != nil {
		x.fail(pc.rel[:len(pc.rel)-1], "", err)
		return p, pc
	}
	defer func() { _ = f.Close() }()
	text := func(t *textFile, name string) bool {
		var b []byte
		t.file, b, t.exists, err = r.openFile(f, name, false)
		if err == nil {
			err = t.parse(b)
		}
		if err != nil && !notExposed(err) {
			x.fail(pc.rel, name, err)
		}
		return err == nil
	}
	if text(&pc.state, "state") {
		p.State = pc.state.val
	}
	if text(&pc.physState, "phys_state") {
		p.PhysState = pc.physState.val
	}
	pc.rate.isRate = true
	if text(&pc.rate, "rate") {
		p.RateGbps = pc.rate.rate
	}
	v, err := r.text(f, "link_layer")
	if err != nil && !notExposed(err) {
		x.fail(pc.rel, "link_layer", err)
	}
	p.LinkLayer, pc.linkLayer = v, v
	p.Counters, pc.counters = r.scanCounters(f, "counters", pc.countersRel, x)
	p.HWCounters, pc.hw = r.scanCounters(f, "hw_counters", pc.hwRel, x)
	return p, pc
}

// scanCounters reads every file of the counters/ or hw_counters/
// directory name below parent for the first time, rel ("ports/1/counters/")
// naming it in errors, and returns the files to read again. A missing directory is
// nil (EFA has no counters/: it answers no performance-management MADs).
// A file that says N/A (a device without a PMA) or that the kernel
// refuses to read (EINVAL when the MAD fails) is left out of the map:
// absent, never 0. It stays among the files, to be tried again.
func (r *reader) scanCounters(parent *os.File, name, rel string, x *devRead) (map[string]uint64, []file) {
	f, err := openDirAt(parent, name)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			x.fail(rel[:len(rel)-1], "", err)
		}
		return nil, nil
	}
	defer func() { _ = f.Close() }()
	entries, err := list(f, maxCounters)
	if err != nil {
		x.fail(rel[:len(rel)-1], "", err)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	var files []file
	if r.cache {
		files = make([]file, 0, len(entries))
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
			x.fail(rel, name, errNotAttr)
			continue
		}
		cf, b, opened, err := r.openFile(f, name, true)
		if opened && r.cache {
			files = append(files, cf)
		}
		if err == nil {
			err = counter(m, name, b)
		}
		if err != nil && !notExposed(err) && !errors.Is(err, errNotAvailable) {
			x.fail(rel, name, err)
		}
	}
	if len(m) == 0 {
		return nil, files // all N/A: as absent as no directory
	}
	return m, files
}

// counter parses b into m[name]; N/A is errNotAvailable and no entry.
func counter(m map[string]uint64, name string, b []byte) error {
	v, err := parseCounter(b)
	if err != nil {
		return err
	}
	m[name] = v
	return nil
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
// most limit of them: past limit it returns those it read first and an
// error saying there were more.
func list(f *os.File, limit int) ([]fs.DirEntry, error) {
	entries, err := f.ReadDir(limit + 1)
	if err != nil && len(entries) == 0 {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	err = nil
	if len(entries) > limit {
		entries = entries[:limit]
		err = errors.New("more than " + strconv.Itoa(limit) + " entries; read " + strconv.Itoa(limit))
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
