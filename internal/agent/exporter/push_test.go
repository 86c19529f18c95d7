package exporter

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type pushed struct {
	method, path string
	body         []byte
}

// gateway is a Pushgateway stand-in that hands every request to the test
// over a channel, so tests wait on pushes instead of sleeping.
func gateway(t *testing.T, status int) (*httptest.Server, <-chan pushed) {
	t.Helper()
	ch := make(chan pushed, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case ch <- pushed{r.Method, r.URL.Path, body}:
		default: // the test has seen enough; don't block the pusher
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func receive(t *testing.T, ch <-chan pushed) pushed {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(10 * time.Second): // a failsafe, not a wait
		t.Fatal("no push arrived")
		return pushed{}
	}
}

func updatedExporter(t *testing.T) *Exporter {
	e := New(Options{})
	e.Update(simSnapshot(t), results)
	return e
}

func TestPush(t *testing.T) {
	srv, ch := gateway(t, http.StatusOK)
	p := NewPusher(srv.URL, "gpuheal-agent", updatedExporter(t).Registry(), map[string]string{"instance": "node-a"})
	if err := p.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch)
	if got.method != http.MethodPut {
		t.Errorf("method %s, want PUT (replace the group)", got.method)
	}
	if want := "/metrics/job/gpuheal-agent/instance/node-a"; got.path != want {
		t.Errorf("path %q, want %q", got.path, want)
	}
	if !bytes.Contains(got.body, []byte("gpuheal_gpu_temperature_celsius")) {
		t.Errorf("body lacks gpuheal_gpu_temperature_celsius (%d bytes)", len(got.body))
	}
}

func TestPushErrorNamesURL(t *testing.T) {
	srv, _ := gateway(t, http.StatusInternalServerError)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, url := range map[string]string{"status 500": srv.URL, "unreachable": closed.URL} {
		p := NewPusher(url, "gpuheal-agent", updatedExporter(t).Registry(), map[string]string{"instance": "node-a"})
		err := p.Push(context.Background())
		if err == nil || !strings.Contains(err.Error(), url) {
			t.Errorf("%s: error %v does not name %s", name, err, url)
		}
	}
}

func TestPushCredentials(t *testing.T) {
	auth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		auth <- user + ":" + pass
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://agent:s3cret@", 1)
	err := NewPusher(url, "j", updatedExporter(t).Registry(), nil).Push(context.Background())
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("error %v: want %s named without the password", err, srv.URL)
	}
	if got := <-auth; got != "agent:s3cret" {
		t.Errorf("basic auth %q, want agent:s3cret", got)
	}
}

func TestRunPusher(t *testing.T) {
	srv, ch := gateway(t, http.StatusOK)
	p := NewPusher(srv.URL, "gpuheal-agent", updatedExporter(t).Registry(), map[string]string{"instance": "node-a"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunPusher(ctx, p, time.Millisecond, func(err error) { t.Errorf("push failed: %v", err) })
	}()
	for range 3 {
		if got := receive(t, ch); got.method != http.MethodPut {
			t.Errorf("method %s, want PUT", got.method)
		}
	}
	cancel()
	<-done
}

func TestRunPusherReportsErrors(t *testing.T) {
	srv, _ := gateway(t, http.StatusServiceUnavailable)
	p := NewPusher(srv.URL, "gpuheal-agent", updatedExporter(t).Registry(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go RunPusher(ctx, p, time.Millisecond, func(err error) {
		select {
		case errs <- err:
		default:
		}
	})
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "503") {
			t.Errorf("error %v does not carry the status", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no error reported")
	}
}
