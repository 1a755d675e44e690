package harness

import (
	"fmt"
	"io"
)

// Sections returns a writer of r that writes each of parts in turn, a
// blank line between two: a tool's terminal output of several tables.
func Sections[R any](parts ...func(io.Writer, R) error) func(io.Writer, R) error {
	return func(w io.Writer, r R) error {
		for i, part := range parts {
			if i > 0 {
				if _, err := fmt.Fprintln(w); err != nil {
					return err
				}
			}
			if err := part(w, r); err != nil {
				return err
			}
		}
		return nil
	}
}
