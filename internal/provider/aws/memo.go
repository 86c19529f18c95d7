package aws

import "sync"

// memo is a small, bounded record of finished actions (key → request id)
// or of looked-up facts (instance → Auto Scaling group). It only spares AWS
// calls within one process; correctness across restarts comes from asking
// AWS (see Replace).
type memo struct {
	mu    sync.Mutex
	ids   map[string]string
	order []string // oldest first, for eviction
	limit int
}

func newMemo(limit int) *memo {
	return &memo{ids: map[string]string{}, limit: limit}
}

func (m *memo) get(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.ids[key]
	return id, ok
}

func (m *memo) put(key, id string) {
	if key == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ids[key]; !ok {
		m.order = append(m.order, key)
	}
	m.ids[key] = id
	for len(m.order) > m.limit {
		delete(m.ids, m.order[0])
		m.order = m.order[1:]
	}
}

// forget drops key, so that the next get misses.
func (m *memo) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ids[key]; !ok {
		return
	}
	delete(m.ids, key)
	for i, k := range m.order {
		if k == key {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
}

// actionKey names one action for one incident on one instance. An empty
// token names no incident, so it is never remembered.
func actionKey(action, token, instanceID string) string {
	if token == "" {
		return ""
	}
	return action + "\x00" + token + "\x00" + instanceID
}
