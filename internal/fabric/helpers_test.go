package fabric

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// copyTree copies a directory of a built fixture, keeping its symlinks as
// symlinks (addDevice clones a captured device with it).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case e.IsDir():
			return os.MkdirAll(to, 0o755)
		default:
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fixture builds the sysfs tree of testdata/<name>.sysfs in a fresh
// directory and returns it. The trees are kept as text because a sysfs
// tree is symlinks and names with colons (0000:3b:00.0), which git on some
// systems and Go module zips do not carry. The format: "#" comments,
// "cd DIR" (later paths are below DIR), "file PATH CONTENT" with CONTENT
// Go-quoted so that its bytes are exact, "link PATH TARGET".
func fixture(t testing.TB, name string) string {
	t.Helper()
	root := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", name+".sysfs"))
	if err != nil {
		t.Fatal(err)
	}
	cd := "."
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		path, arg, _ := strings.Cut(rest, " ")
		switch verb {
		case "cd":
			cd = path
		case "file":
			content, err := strconv.Unquote(arg)
			if err != nil {
				t.Fatalf("%s.sysfs:%d: %v", name, i+1, err)
			}
			write(t, root, filepath.Join(cd, path), content)
		case "link":
			to := filepath.Join(root, cd, path)
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(arg, to); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s.sysfs:%d: unknown %q", name, i+1, verb)
		}
	}
	return root
}

// write writes content to root/rel, creating its directory.
func write(t testing.TB, root, rel, content string) {
	t.Helper()
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func f64(v float64) *float64 { return &v }

// addDevice lays out a device the way the kernel does, with src's files:
// class/infiniband/<name> links to the PCI function's infiniband/<name>,
// whose device link points back at the function, whose driver link names
// the driver.
func addDevice(t testing.TB, root, src, name, bdf, driver string) {
	t.Helper()
	fn := filepath.Join(root, "devices", "pci0000:00", bdf)
	dir := filepath.Join(fn, "infiniband", name)
	if err := os.MkdirAll(filepath.Join(root, "class", "infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyTree(t, src, dir)
	if err := os.Remove(filepath.Join(dir, "device")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		filepath.Join(dir, "device"):                     "../../../" + bdf,
		filepath.Join(fn, "driver"):                      "../../../bus/pci/drivers/" + driver,
		filepath.Join(root, "class", "infiniband", name): "../../devices/pci0000:00/" + bdf + "/infiniband/" + name,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
}
