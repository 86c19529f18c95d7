package statuspage

import (
	"bytes"
	"fmt"
	"net/http"
	"time"
)

// Event names of the live stream.
const (
	EventFleet     = "fleet"
	EventIncidents = "incidents"
	// EventPing is sent after KeepAlive of silence. It is an event rather
	// than an SSE comment so that the page sees it and can tell a quiet
	// fleet from a stream that a proxy holds back.
	EventPing = "ping"
	// EventUnavailable carries {"error": "..."} when the cluster cannot be read.
	EventUnavailable = "unavailable"
)

// events streams Server-Sent Events: the fleet and the incidents at once,
// then each again whenever it changed at the last look. Looks come every
// Interval from the controller's cache.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	// Tells nginx-style proxies not to buffer the stream.
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// The browser reconnects by itself; after a controller restart it
	// should do so soon.
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", (2 * time.Second).Milliseconds()); err != nil {
		return
	}
	_ = rc.Flush()

	tick := h.opts.Clock.NewTicker(h.opts.Interval)
	defer tick.Stop()
	var lastFleet, lastIncidents, lastErr []byte
	lastSent := h.opts.Clock.Now()
	for {
		sent, err := h.sendChanges(w, r, &lastFleet, &lastIncidents, &lastErr)
		if err != nil {
			return // the viewer went away
		}
		now := h.opts.Clock.Now()
		if !sent && now.Sub(lastSent) >= h.opts.KeepAlive {
			if err := writeEvent(w, EventPing, []byte("{}")); err != nil {
				return
			}
			sent = true
		}
		if sent {
			lastSent = now
			if err := rc.Flush(); err != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C():
		}
	}
}

// sendChanges writes the views that differ from the last ones sent and
// reports whether it wrote anything. Only a write error is returned: a
// failed read of the cluster is told to the page as an event.
func (h *handler) sendChanges(w http.ResponseWriter, r *http.Request, lastFleet, lastIncidents, lastErr *[]byte) (bool, error) {
	fleet, incidents, err := h.snaps.get(r.Context())
	if err != nil {
		msg, _ := jsonError(err)
		if bytes.Equal(msg, *lastErr) {
			return false, nil
		}
		*lastErr = msg
		return true, writeEvent(w, EventUnavailable, msg)
	}
	*lastErr = nil
	sent := false
	if !bytes.Equal(fleet, *lastFleet) {
		if err := writeEvent(w, EventFleet, fleet); err != nil {
			return false, err
		}
		*lastFleet, sent = fleet, true
	}
	if !bytes.Equal(incidents, *lastIncidents) {
		if err := writeEvent(w, EventIncidents, incidents); err != nil {
			return false, err
		}
		*lastIncidents, sent = incidents, true
	}
	return sent, nil
}

// writeEvent writes one event; data is compact JSON, one line.
func writeEvent(w http.ResponseWriter, name string, data []byte) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	return err
}
