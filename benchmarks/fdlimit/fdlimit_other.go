//go:build !unix

package fdlimit

import "math"

// Read returns no limit: there is no RLIMIT_NOFILE to read here.
func Read() (Limit, error) { return Limit{Soft: math.MaxUint64, Hard: math.MaxUint64}, nil }

// Raise has nothing to raise here; it returns Read's limit.
func Raise() (Limit, error) { return Read() }
