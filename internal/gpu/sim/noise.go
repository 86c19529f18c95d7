package sim

import (
	"fmt"
	"hash/fnv"
	"math"
)

// Every generated value is a pure function of (seed, node name, GPU, what,
// time tick): no math/rand state, so two nodes built with the same options
// produce the same bytes no matter how often or in which order they are
// read, and a fleet of nodes sharing a seed still differ by name.

// hgxBusIDs are the GPU PCI addresses of a typical 8-GPU HGX board.
var hgxBusIDs = []string{
	"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
	"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0",
}

// what-keys keep the hash streams of different values apart.
const (
	hUUIDHi uint64 = iota + 1
	hUUIDLo
	hSerial
	hBaseTemp
	hBasePower
	hMemUsed
	hTempNoise
	hMemTempNoise
	hPowerNoise
	hDBEAddr
	hRemapAddr
	hNodeGUID
	hRDMARate // and hRDMARate+1: per direction
	_
	hRDMAJitter // and hRDMAJitter+1
	_
)

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func nodeKey(seed int64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return splitmix(uint64(seed) ^ splitmix(h.Sum64()))
}

// hash mixes the node key with a GPU index, a what-key and a tick.
func hash(key uint64, gpu int, what uint64, tick uint64) uint64 {
	return splitmix(key ^ splitmix(uint64(gpu)<<48^what<<40^tick))
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// round rounds to the given number of decimals, as NVML and nvidia-smi
// report integers (temperatures, clocks) or fixed decimals (watts).
func round(v float64, decimals int) float64 {
	p := math.Pow10(decimals)
	return math.Round(v*p) / p
}

func gpuUUID(key uint64, gpu int) string {
	hi, lo := hash(key, gpu, hUUIDHi, 0), hash(key, gpu, hUUIDLo, 0)
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x",
		hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}

func gpuSerial(key uint64, gpu int) string {
	return fmt.Sprintf("1%012d", hash(key, gpu, hSerial, 0)%1_000_000_000_000)
}
