package sim

// UUIDs are the node's GPU UUIDs by index, as its snapshots report them,
// without taking a snapshot (which would step the node's noise): a sim
// fleet's device manager hands them to pods the way the NVIDIA device
// plugin does.
func (n *Node) UUIDs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, len(n.gpus))
	for i, g := range n.gpus {
		out[i] = g.uuid
	}
	return out
}
