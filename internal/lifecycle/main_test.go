package lifecycle

import (
	"os"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

// TestMain fails the run when the tests leave goroutines running or, on
// Linux, descriptors open (a metrics listener not shut down, say).
func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }
