//go:build !linux

package testredis

import "syscall"

// procAttr is nothing special off Linux: the test's cleanup kills the server.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
