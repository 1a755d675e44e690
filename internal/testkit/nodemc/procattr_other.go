//go:build !linux

package nodemc

import "syscall"

// procAttr puts node in a process group of its own, so that one signal
// ends whatever it started; off Linux only the test's cleanup kills it.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
