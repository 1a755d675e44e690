package harness

import (
	"errors"
	"fmt"
)

// FailedTrials returns an error naming every item that failed, or nil:
// "TOOL: N of M NOUN failed: " and each failure as failure writes it (empty
// for an item that passed).
func FailedTrials[T any](tool, noun string, items []T, failure func(T) string) error {
	var errs []error
	for _, it := range items {
		if f := failure(it); f != "" {
			errs = append(errs, errors.New(f))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d of %d %s failed: %w", tool, len(errs), len(items), noun, errors.Join(errs...))
}
