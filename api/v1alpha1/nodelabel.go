package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
)

// NodeLabelValue is a node's name as a label value (LabelNode,
// LabelCheckNode): whole when it fits a label value's 63 characters,
// otherwise its first 52 followed by "-" and 10 hex of its sha256, so two
// long names that share a prefix still differ. Whoever selects by such a
// label computes the value the same way.
func NodeLabelValue(node string) string {
	if len(node) <= 63 {
		return node
	}
	sum := sha256.Sum256([]byte(node))
	return node[:52] + "-" + hex.EncodeToString(sum[:])[:10]
}
