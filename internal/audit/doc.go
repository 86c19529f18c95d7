// Package audit is gpuheal's append-only, hash-chained record of every
// decision and step the controller takes: what was detected, what the policy
// decided (dry-run decisions and breaker refusals too), each cordon,
// eviction and provider request, and how the incident ended.
//
// A Store assigns each Record a sequence number and links it to the one
// before through SHA-256 (Record.Hash covers the record's fields and the
// previous Hash), so Verify finds a record that was deleted, reordered or
// edited after the fact and names the first bad one. Writes are idempotent
// by Record.Key: a controller that repeats a step after a crash repeats the
// Key, and the store keeps the first record.
//
// Over the chain sits an RFC 6962 Merkle tree (Tree, leaves from each
// record's Hash) whose heads a Notary signs (note, ed25519) and hands to
// Publishers outside the store; VerifySince checks a log against a head
// signed earlier, which a writer who recomputes the chain cannot forge.
//
// Backends live in subpackages: sqlite (a file on a volume), dynamo
// (DynamoDB) and jsonl (JSON lines for log shippers). Buffered sits in front
// of any of them so that a failing store never blocks remediation.
package audit
