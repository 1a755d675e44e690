package fdbudget

import (
	"fmt"
	"os"
)

// OpenFDs counts the process's open descriptors.
func OpenFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("reactor: counting open descriptors: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("reactor: counting open descriptors: %w", err)
	}
	return len(names) - 1, nil // less the directory itself
}
