package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkd-io/zkd/internal/console"
	"github.com/zkd-io/zkd/internal/testing/needs"
	"github.com/zkd-io/zkd/zk"
)

// ScreenshotsEnv names the directory the browser test leaves its screenshots in (CI sets
// it and keeps the directory as an artifact); without it they go to the test's temporary
// directory.
const ScreenshotsEnv = "ZKD_CONSOLE_SCREENSHOTS"

// TestConsoleInBrowser drives the console in headless Chromium: the page loads, the tree
// expands, a search finds a node, a write without credentials is refused and one with them
// lands and is read back by a client. One browser for all of it: it is heavy.
func TestConsoleInBrowser(t *testing.T) {
	chromium := needs.Chromium(t)
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	f := newFixture(t)
	shots := os.Getenv(ScreenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox will not start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860),
		chromedp.UserDataDir(t.TempDir()),
	)
	// Generous: a cold Chromium on a loaded 2-core machine takes seconds to start.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// Closing the context stops the browser process and waits for it.
	defer cancelBrowser()

	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100 makes a PNG, less a JPEG
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// until waits for a JavaScript condition to hold.
	until := func(step, js string) {
		t.Helper()
		_, err := chromedp.Run(bctx, chromedp.Poll[bool](js,
			chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute)))
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	// js runs a script for its effect.
	js := func(expr string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Evaluate[any](expr)(ctx, tg)
			return chromedp.Void{}, err
		}
	}

	// Names whose invisible code points would make them read as something else.
	tricky := []string{"\u202egnp.exe", "zero\u200bwidth\u2066"}
	{
		zctx, zcancel := context.WithTimeout(ctx, time.Minute)
		if _, err := f.zk.Create(zctx, "/names", nil, zk.OpenACL(), 0); err != nil {
			t.Fatal(err)
		}
		for _, n := range tricky {
			if _, err := f.zk.Create(zctx, "/names/"+n, nil, zk.OpenACL(), 0); err != nil {
				t.Fatal(err)
			}
		}
		zcancel()
	}

	run("load", chromedp.Navigate(f.base+"/"), chromedp.WaitVisible(chromedp.CSS(`.tree-row[data-path="/app"]`)))
	run("expand /names", chromedp.Click(chromedp.CSS(`.tree-row[data-path="/names"] .toggle`)))
	for _, n := range tricky {
		path, _ := json.Marshal("/names/" + n)
		want, _ := json.Marshal(console.Display(n))
		// The row keeps the raw path (what the API is asked for); the name shows escapes,
		// each in a span of its own.
		until("escaped "+console.Display(n), fmt.Sprintf(`(() => {
			const row = [...document.querySelectorAll(".tree-row")].find(r => r.dataset.path === %s);
			return row !== undefined && row.querySelector(".name").textContent === %s &&
				row.querySelectorAll(".name .esc").length > 0;
		})()`, path, want))
	}
	shot("names")
	run("expand /app",
		chromedp.Click(chromedp.CSS(`.tree-row[data-path="/app"] .toggle`)),
		chromedp.WaitVisible(chromedp.CSS(`.tree-row[data-path="/app/json"]`)),
		chromedp.Click(chromedp.CSS(`.tree-row[data-path="/app/json"] .name`)),
		chromedp.WaitVisible(chromedp.CSS(`#node-path`)))
	until("JSON view", `document.querySelector("#data-view").textContent.includes('"a": 1')`)
	shot("tree")

	run("search",
		js(`location.hash = "#search"`),
		chromedp.WaitVisible(chromedp.CSS(`#search-input`)),
		chromedp.SetValue(chromedp.CSS(`#search-input`), "/many/c012"),
		chromedp.Click(chromedp.CSS(`#search-go`)),
		chromedp.WaitVisible(chromedp.CSS(`#search-results li[data-path="/many/c0123"]`)))
	status, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(`#search-status`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(status, "10 matches") {
		t.Errorf("search status %q, want 10 matches", status)
	}

	// A search hit opens the node view; without credentials the edit is refused.
	run("open from search",
		chromedp.Click(chromedp.CSS(`#search-results li[data-path="/many/c0123"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#edit-data`)))
	until("node view of the hit", `document.querySelector("#node-path").textContent === "/many/c0123"`)
	run("edit without credentials",
		chromedp.SetValue(chromedp.CSS(`#edit-data`), "from the browser"),
		chromedp.Click(chromedp.CSS(`#edit-save`)))
	until("refusal shown", `document.querySelector("#edit-status").textContent.includes("refused (401)")`)
	zctx, zcancel := context.WithTimeout(ctx, time.Minute)
	defer zcancel()
	if data, st, err := f.zk.Get(zctx, "/many/c0123"); err != nil || len(data) != 0 || st.Version != 0 {
		t.Fatalf("after the refused edit: %q version %v %v", data, st, err)
	}

	run("credentials",
		chromedp.SetValue(chromedp.CSS(`#cred`), "alice:wonder"),
		// requestSubmit, not form.submit(): the page's submit handler must run.
		js(`document.querySelector("#cred-form").requestSubmit()`))
	until("credentials taken", `document.querySelector("#cred-state").textContent === "as alice"`)
	run("edit with credentials",
		chromedp.SetValue(chromedp.CSS(`#edit-data`), "from the browser"),
		chromedp.Click(chromedp.CSS(`#edit-save`)))
	until("saved", `document.querySelector("#edit-status").textContent.includes("saved")`)
	if data, st, err := f.zk.Get(zctx, "/many/c0123"); err != nil || string(data) != "from the browser" || st.Version != 1 {
		t.Fatalf("read back: %q %v %v", data, st, err)
	}
	until("node view reloaded", `(document.querySelector("#data-view") || {}).textContent === "from the browser"`)
	shot("edit")

	// Some traffic for the charts to show: a write every 50 ms (pacing, not waiting) until
	// the screenshot is taken.
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			f.zk.Set(zctx, "/app/bin", []byte{byte(i)}, -1)
		}
	}()
	run("metrics", js(`location.hash = "#metrics"`), chromedp.WaitVisible(chromedp.CSS(`canvas[data-key="znode_count"]`)))
	// A poll a second: every chart (packets/s needs two polls for its first) has drawn a few.
	until("charts drawn", `[...document.querySelectorAll(".chart canvas")].every(c => Number(c.dataset.points) >= 10)`)
	shot("metrics")
	close(stop)
	<-loadDone
	t.Logf("screenshots in %s", shots)
}
