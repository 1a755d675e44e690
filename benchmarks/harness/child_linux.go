package harness

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes Linux send the child SIGTERM when this program dies
// without stopping it (a crash, SIGKILL), so that no run leaves a server
// behind. The signal follows the thread that started the child; Go ends a
// thread only when a goroutine locked to it exits, which the tools never do.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
