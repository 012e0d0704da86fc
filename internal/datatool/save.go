package datatool

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/zkd-io/zkd/internal/storage"
)

// Save fetches a consistent snapshot from a running server's AdminServer (the snapshot
// command, as ZooKeeper 3.9 serves it and zkd does) into file, like `etcdctl snapshot
// save`: base is the AdminServer's command URL (http://host:8080/commands), auth the
// Authorization header's value ("digest user:password"), empty for none. The snapshot is
// read back whole before file appears, so a truncated or corrupt download leaves nothing.
func Save(ctx context.Context, w io.Writer, base, auth, file string) error {
	url := strings.TrimSuffix(base, "/") + "/snapshot?streaming=true"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("save: %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp*")
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	n, err := io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	nodes := 0
	f, err := os.Open(tmp.Name())
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	err = storage.ReadSnapshot(f, storage.SnapshotHandler{Node: func(storage.SnapNode) error { nodes++; return nil }})
	f.Close()
	if err != nil {
		return fmt.Errorf("save: the snapshot received does not read back: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	fmt.Fprintf(w, "saved %s: %d bytes, %d znodes, last zxid %s\n", file, n, nodes, resp.Header.Get("last_zxid"))
	return nil
}
