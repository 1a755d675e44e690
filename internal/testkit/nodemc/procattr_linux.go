package nodemc

import "syscall"

// procAttr puts node in a process group of its own, so that one signal
// ends whatever it started, and makes it die with the test process, even
// one that crashed before its cleanups ran.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
