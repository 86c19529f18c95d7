// Package version carries the build's version, stamped by the Makefile with
// -ldflags "-X github.com/gpuheal/gpuheal/internal/version.Version=…".
package version

// Version is the release or `git describe` of this build.
var Version = "dev"
