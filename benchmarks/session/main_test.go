package session

import (
	"os"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

// TestMain fails the run when the tests leave goroutines running or
// descriptors open: a players phase opens and closes hundreds of each.
func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }
