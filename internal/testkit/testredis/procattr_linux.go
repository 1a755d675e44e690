package testredis

import "syscall"

// procAttr makes the server die with the test process, even one that
// crashed before its cleanups ran.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
