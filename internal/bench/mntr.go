package bench

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// mntr asks a server for its mntr four-letter word and returns the numeric values by key
// (zk_max_snapshottime ...); non-numeric lines (zk_version, zk_server_state) are left out.
// The server must allow mntr (4lw.commands.whitelist).
func mntr(ctx context.Context, addr string, o dialOptions) (map[string]float64, error) {
	o = o.withDefaults()
	nc, err := connect(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(o.dialTimeout))
	if _, err := nc.Write([]byte("mntr")); err != nil {
		return nil, fmt.Errorf("mntr to %s: %w", addr, err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(nc)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			out[k] = f
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mntr from %s: %w", addr, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mntr from %s: no values (is mntr in 4lw.commands.whitelist?)", addr)
	}
	return out, nil
}
