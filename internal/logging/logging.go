// Package logging is the one logging choice of every gpuheal binary:
// log/slog, bridged to logr for controller-runtime and to klog for client-go,
// so a line from any layer has the same format and level handling.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Options selects the format and verbosity of the logs.
type Options struct {
	// Format is "json" (default, for log shippers) or "text".
	Format string
	// Level is "debug", "info" (default), "warn" or "error".
	Level string
}

// New builds the slog logger described by opts, writing to w.
func New(w io.Writer, opts Options) (*slog.Logger, error) {
	level, err := ParseLevel(opts.Level)
	if err != nil {
		return nil, err
	}
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch strings.ToLower(opts.Format) {
	case "", "json":
		h = slog.NewJSONHandler(w, ho)
	case "text":
		h = slog.NewTextHandler(w, ho)
	default:
		return nil, fmt.Errorf("log format %q: want json or text", opts.Format)
	}
	return slog.New(h), nil
}

// Setup builds the logger, makes it slog's default, and routes
// controller-runtime's and klog's output through it.
func Setup(w io.Writer, opts Options) (*slog.Logger, error) {
	l, err := New(w, opts)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(l)
	lr := logr.FromSlogHandler(l.Handler())
	ctrllog.SetLogger(lr)
	klog.SetLogger(lr)
	return l, nil
}

// ParseLevel accepts the level names operators type.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
}
