package zktest

import (
	"os"
	"strings"
	"testing"
)

func testLogging() bool { return os.Getenv("ZKTEST_LOG") != "" }

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
