// Package benchstat owns the numbers a benchmark run reports and how they are measured: the
// Result line that zkbench (internal/bench) and bench/etcdbench write as JSON (and `zkbench compare`
// renders into bench/RESULTS.md), the latencies and error kinds a Recorder collects into it,
// the server's CPU time and RSS and the whole machine's use sampled from /proc, and the
// benchmark client's own CPU time.
//
// It is the one copy both benchmarks share, so that a zkd run and an etcd run are measured
// and reported the same way; it depends on no client library (a Recorder is given the
// function that names a client's errors).
package benchstat
