// Package trace stores labelled per-GPU telemetry compactly: one binary
// file per GPU slot (a run of predict.Samples at a fixed interval) and a
// manifest.json with the fleet's description and its labels (failures,
// and the benign episodes a generator put in).
//
// # GPU file (gpu-NNNNN.ght), version 1
//
//	"GHTR" | uvarint version | uvarint gpu | varint start (Unix s) |
//	uvarint interval (s) | uvarint samples | records…
//
// Each record is a uvarint field mask followed by the fields it names, in
// bit order, each relative to the previous sample (the first is relative
// to a sample with every gauge unreported and nothing else set):
//
//	mask 0         uvarint n: the next n samples repeat the previous one
//	bits 0–5       gauges (predict.Gauge* order): zigzag varint delta of the
//	               value rounded to a whole unit; unreported is MinInt32
//	bit 6          Xids: uvarint count, then that many uvarint codes
//	bit 7          flags: bit 0 missing, 1 remap pending, 2 remap failure
//	bit 8          clock event reasons: uvarint
//	bit 9          PCIe gen, gen max, width, width max: 4 bytes
//	bit 10         NVLink up, total: 2 bytes
//	bit 11         recovery action: 1 byte
//	bit 12         counters read (predict.Sample.CountersRead): uvarint
//	bit 13         time skip: uvarint k, the sample is k intervals late
//	bits 14–24     counters (predict.Counter* order): zigzag varint delta
//
// A sample repeats the previous one in every field its record does not
// name, except Xids, which are empty unless named. Most samples of a
// healthy GPU differ only in a few noisy gauges, so a GPU-day costs a few
// kilobytes; docs/predictor.md gives the measured size.
package trace
