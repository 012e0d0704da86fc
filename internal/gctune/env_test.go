package gctune

import (
	"os"
	"testing"
)

func unsetenv(t *testing.T, k string) {
	t.Helper()
	old, had := os.LookupEnv(k)
	os.Unsetenv(k)
	t.Cleanup(func() {
		if had {
			os.Setenv(k, old)
		}
	})
}
