package nvml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes files (path → "" for a file, "->target" for a link) under a
// temporary root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, what := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(what, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte("ELF"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFindLibrary(t *testing.T) {
	const versioned = "libnvidia-ml.so.550.90.07"
	for _, tc := range []struct {
		name   string
		goarch string
		files  map[string]string
		want   string // relative to the root
	}{
		{"debian multiarch, relative link as installed", "amd64", map[string]string{
			"usr/lib/x86_64-linux-gnu/" + LibraryName: "->" + versioned,
			"usr/lib/x86_64-linux-gnu/" + versioned:   "",
		}, "usr/lib/x86_64-linux-gnu/" + versioned},
		{"absolute link means the driver's own tree", "amd64", map[string]string{
			"usr/lib64/" + LibraryName: "->/usr/lib64/" + versioned,
			"usr/lib64/" + versioned:   "",
		}, "usr/lib64/" + versioned},
		{"multiarch wins over lib64", "amd64", map[string]string{
			"usr/lib/x86_64-linux-gnu/" + LibraryName: "",
			"usr/lib64/" + LibraryName:                "",
		}, "usr/lib/x86_64-linux-gnu/" + LibraryName},
		{"arm64 looks in its own multiarch directory", "arm64", map[string]string{
			"usr/lib/x86_64-linux-gnu/" + LibraryName:  "",
			"usr/lib/aarch64-linux-gnu/" + LibraryName: "",
		}, "usr/lib/aarch64-linux-gnu/" + LibraryName},
		{"plain lib as a last resort", "amd64", map[string]string{"lib/" + LibraryName: ""}, "lib/" + LibraryName},
		{"the root is the library directory (EKS AMI /usr/lib64)", "amd64", map[string]string{
			LibraryName: "->" + versioned,
			versioned:   "",
		}, versioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files)
			got, err := findLibrary(root, tc.goarch)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tc.want); got != want {
				t.Errorf("findLibrary = %s, want %s", got, want)
			}
		})
	}
}

func TestFindLibrarySystemSearch(t *testing.T) {
	for _, root := range []string{"", "/", "//"} {
		if got, err := findLibrary(root, "amd64"); got != "" || err != nil {
			t.Errorf("findLibrary(%q) = %q, %v; want the loader's search", root, got, err)
		}
	}
}

func TestFindLibraryFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"no library", map[string]string{"usr/lib/x86_64-linux-gnu/libc.so.6": ""},
			[]string{"no " + LibraryName + " under driver root", "usr/lib/x86_64-linux-gnu, usr/lib64, usr/lib, lib64, lib"}},
		{"dangling link", map[string]string{"usr/lib64/" + LibraryName: "->libnvidia-ml.so.550.90.07"},
			[]string{"no such file"}},
		{"link out of the root", map[string]string{"usr/lib64/" + LibraryName: "->../../../etc/passwd"},
			[]string{"links outside the root"}},
		{"directory", map[string]string{"usr/lib64/" + LibraryName + "/x": ""}, []string{"is not a file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files)
			_, err := findLibrary(root, "amd64")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, root) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := findLibrary(filepath.Join(t.TempDir(), "absent"), "amd64"); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing root: %v", err)
	}
}
