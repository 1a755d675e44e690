package mcauth

import (
	"os"
	"testing"

	"github.com/tidegate/tidegate/internal/testkit/leaktest"
)

func TestMain(m *testing.M) { os.Exit(leaktest.MainFDs(m)) }
