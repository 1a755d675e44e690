package rps

import "github.com/tidegate/tidegate/benchmarks/harness"

// Machine describes where a benchmark ran, under the names bench rps's JSON
// has always used; harness.ThisHost reads it.
type Machine struct {
	NumCPU    int    `json:"num_cpu"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	GoVersion string `json:"go_version"`
	Kernel    string `json:"kernel,omitempty"`
	CPUModel  string `json:"cpu_model,omitempty"`
}

// ThisMachine describes this machine (harness.ThisHost).
func ThisMachine() Machine {
	h := harness.ThisHost()
	return Machine{NumCPU: h.NumCPU, GOOS: h.OS, GOARCH: h.Arch, GoVersion: h.GoVersion, Kernel: h.Kernel, CPUModel: h.CPU}
}
