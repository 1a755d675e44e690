//go:build !linux

package harness

import "os/exec"

// dieWithParent does nothing where the kernel has no parent-death signal:
// only Stop ends the child.
func dieWithParent(*exec.Cmd) {}
