package mcbackend

import (
	"os"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

// TestMain fails the run when goroutines started by the tests are still
// running after them.
func TestMain(m *testing.M) { os.Exit(leaktest.Main(m)) }
