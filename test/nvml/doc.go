// Package nvml runs the real gpuheal-agent binary, built as `make build`
// builds it, on a stand-in libnvidia-ml.so.1 written in C (stub/). It
// covers what go-nvml's Go mocks cannot: symbol resolution through dlopen
// and the lazy PLT, the internal linker, the cgo calls and their struct
// layouts, and how the agent finds the library. It builds binaries and a C
// library, so its tests are built only with -tags integration.
package nvml
