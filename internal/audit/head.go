package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TreeHead is the Merkle tree of the first Size records: its root hash.
type TreeHead struct {
	Size int64
	Hash tlog.Hash
	// Time is when the head was signed (zero when it was not).
	Time time.Time
}

// EmptyTreeHash is RFC 6962's hash of the empty tree, SHA-256 of nothing.
var EmptyTreeHash = tlog.Hash(sha256.Sum256(nil))

// headPrefix is the first line of a head's note text; a new format gets a
// new first line.
const headPrefix = "gpuheal.io/audit tree v1\n"

// maxHead bounds a signed head read from outside; a real one is ~200 bytes.
const maxHead = 64 << 10

// KeyName is the name in the note keys gpuheal generates.
const KeyName = "gpuheal-audit"

// GenerateKey returns a new ed25519 note signer key (secret) and its
// verifier key (public), both in golang.org/x/mod/sumdb/note's text form.
func GenerateKey() (signer, verifier string, err error) {
	return note.GenerateKey(rand.Reader, KeyName)
}

// FormatHead is the note text of h: four lines, "gpuheal.io/audit tree v1",
// the size in decimal, the root hash in base64 and the time in RFC 3339 UTC.
func FormatHead(h TreeHead) []byte {
	return fmt.Appendf(nil, "%s%d\n%s\n%s\n", headPrefix, h.Size, h.Hash, h.Time.UTC().Format(time.RFC3339Nano))
}

// ParseHead parses FormatHead's text strictly.
func ParseHead(text []byte) (TreeHead, error) {
	if !bytes.HasPrefix(text, []byte(headPrefix)) {
		return TreeHead{}, fmt.Errorf("not a gpuheal audit tree head: the text does not start with %q", strings.TrimSpace(headPrefix))
	}
	lines := strings.Split(strings.TrimPrefix(string(text), headPrefix), "\n")
	if len(lines) != 4 || lines[3] != "" {
		return TreeHead{}, fmt.Errorf("audit tree head: want size, hash and time lines after the first, each ending in a newline")
	}
	n, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil || n < 0 || lines[0] != strconv.FormatInt(n, 10) {
		return TreeHead{}, fmt.Errorf("audit tree head: size %q is not a decimal number ≥ 0", lines[0])
	}
	b, err := base64.StdEncoding.Strict().DecodeString(lines[1])
	if err != nil || len(b) != tlog.HashSize {
		return TreeHead{}, fmt.Errorf("audit tree head: hash %q is not 32 bytes in base64", lines[1])
	}
	t, err := time.Parse(time.RFC3339Nano, lines[2])
	if err != nil {
		return TreeHead{}, fmt.Errorf("audit tree head: time %q: %w", lines[2], err)
	}
	return TreeHead{Size: n, Hash: tlog.Hash(b), Time: t.UTC()}, nil
}

// SignHead signs h with s and returns the signed note.
func SignHead(h TreeHead, s note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: string(FormatHead(h))}, s)
	if err != nil {
		return nil, fmt.Errorf("signing audit tree head at size %d: %w", h.Size, err)
	}
	return msg, nil
}

// OpenHead checks a signed head against the verifier key v and parses it.
// A head not signed by v, or whose text does not parse, is an error that
// says which.
func OpenHead(msg []byte, v note.Verifier) (TreeHead, error) {
	if len(msg) > maxHead {
		return TreeHead{}, fmt.Errorf("signed audit tree head is %d bytes, more than the %d allowed", len(msg), maxHead)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	var unknown *note.UnknownVerifierError
	var invalid *note.InvalidSignatureError
	var unverified *note.UnverifiedNoteError
	switch {
	case errors.As(err, &unverified) && len(unverified.Note.UnverifiedSigs) > 0:
		s := unverified.Note.UnverifiedSigs[0]
		return TreeHead{}, fmt.Errorf("signed audit tree head: signed by %s+%08x, not by the key given (%s+%08x)",
			s.Name, s.Hash, v.Name(), v.KeyHash())
	case errors.As(err, &unknown):
		return TreeHead{}, fmt.Errorf("signed audit tree head: signed by %s+%08x, not by the key given (%s+%08x)",
			unknown.Name, unknown.KeyHash, v.Name(), v.KeyHash())
	case errors.As(err, &invalid):
		return TreeHead{}, fmt.Errorf("signed audit tree head: the signature of %s does not match the text: the head was altered", invalid.Name)
	case err != nil:
		return TreeHead{}, fmt.Errorf("signed audit tree head: %w", err)
	}
	return ParseHead([]byte(n.Text))
}

// NewVerifier parses a verifier key (the public half of GenerateKey).
func NewVerifier(key string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(key))
	if err != nil {
		return nil, fmt.Errorf("audit verifier key %q: %w (want the public key, NAME+HASH+BASE64)", short(strings.TrimSpace(key)), err)
	}
	return v, nil
}

// NewSigner parses a signer key (the secret half of GenerateKey).
func NewSigner(key string) (note.Signer, error) {
	s, err := note.NewSigner(strings.TrimSpace(key))
	if err != nil {
		// Never echo the key: it is the secret.
		return nil, fmt.Errorf("audit signer key: %w (want PRIVATE+KEY+NAME+HASH+BASE64 from gpuheal audit keygen)", err)
	}
	return s, nil
}
