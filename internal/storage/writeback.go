package storage

import "io"

// writebackEvery is how many bytes of a snapshot are written between two requests to the
// kernel to start writing them out. A snapshot is written far faster than a disk takes
// it, and the txn log's fsyncs share the disk and the file system's journal: left to the
// kernel's own pace, the dirty pages pile up to a large share of memory, and an fsync of the
// log that lands behind them waits for them (a write's latency, for every client, goes up
// by the snapshot's size over the disk's speed). Started every few megabytes, the writeback
// keeps pace and the final fsync has little left to do (RocksDB's bytes_per_sync).
const writebackEvery = 8 << 20

// writeback passes writes to f and, every writebackEvery bytes, asks the kernel to start
// writing out what came before (startWriteback: a no-op where the file is not an OS file or
// the system has no such call).
type writeback struct {
	f        File
	off, req int64                      // bytes written; bytes whose writeback was requested
	start    func(f File, off, n int64) // startWriteback; tests record the requests
}

var _ io.Writer = (*writeback)(nil)

func (w *writeback) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if w.off-w.req >= writebackEvery {
		if w.start == nil {
			w.start = startWriteback
		}
		w.start(w.f, w.req, w.off-w.req)
		w.req = w.off
	}
	return n, err
}
