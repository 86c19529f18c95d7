package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
)

// OCI image-spec media types (v1.1).
const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type blob []byte

func (b blob) digest() string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (b blob) describe(mediaType string) descriptor {
	return descriptor{MediaType: mediaType, Digest: b.digest(), Size: len(b)}
}

// writeImage writes an OCI image layout, as a tar archive, holding one
// uncompressed layer with this executable at /pause. Every timestamp is
// zero, so the same binary always gives the same image digest.
func writeImage(path, ref string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	exe, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	layer, err := tarOf(map[string][]byte{"pause": exe}, 0o755)
	if err != nil {
		return err
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/pause"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{blob(layer).digest()}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        blob(config).describe(mediaConfig),
		"layers":        []descriptor{blob(layer).describe(mediaLayer)},
	})
	if err != nil {
		return err
	}
	tag := ref[strings.LastIndex(ref, ":")+1:]
	m := blob(manifest).describe(mediaManifest)
	m.Annotations = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": tag}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []descriptor{m}})
	if err != nil {
		return err
	}
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": index}
	for _, b := range []blob{layer, config, manifest} {
		files["blobs/sha256/"+strings.TrimPrefix(b.digest(), "sha256:")] = b
	}
	archive, err := tarOf(files, 0o644)
	if err != nil {
		return err
	}
	return os.WriteFile(path, archive, 0o644)
}

// tarOf archives files in a fixed (sorted) order with zero timestamps.
func tarOf(files map[string][]byte, mode int64) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, n := range names {
		if i := strings.LastIndex(n, "/"); i > 0 {
			for d := n[:i]; d != "" && !dirs[d]; d = parentDir(d) {
				dirs[d] = true
			}
		}
	}
	dirNames := make([]string, 0, len(dirs))
	for d := range dirs {
		dirNames = append(dirNames, d)
	}
	slices.Sort(dirNames)
	for _, d := range dirNames {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, n := range names {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: mode, Size: int64(len(files[n])), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", n, err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, fmt.Errorf("archiving %s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func parentDir(d string) string {
	if i := strings.LastIndex(d, "/"); i > 0 {
		return d[:i]
	}
	return ""
}
