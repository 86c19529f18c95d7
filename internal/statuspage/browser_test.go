//go:build integration

package statuspage

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpuheal/gpuheal/internal/testenv"
	"github.com/gpuheal/gpuheal/internal/testenv/testcluster"
	"github.com/gpuheal/gpuheal/internal/testproc"
)

// proxyPath is where the API server's service proxy puts the page; the
// test serves it there so that a URL that is not relative would break.
const proxyPath = "/api/v1/namespaces/gpuheal/services/http:gpuheal-controller:metrics/proxy"

// TestBrowser loads the page in headless Chromium against a real API
// server: it shows one tile per node, and a tile turns red when its node's
// GPUHealAcceleratorHealthy turns False. With GPUHEAL_UPDATE_SCREENSHOT=1 it
// also writes docs/status-page.png.
func TestBrowser(t *testing.T) {
	chromium := findChromium(t)
	env := testcluster.Start(t, testenv.Options{Scheme: testScheme(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := buildScene(ctx, t, env.Client, time.Now())

	mux := http.NewServeMux()
	mux.Handle(proxyPath+Prefix, http.StripPrefix(proxyPath, New(env.Client, Options{Interval: 200 * time.Millisecond})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	browser := newBrowser(t, chromium)
	if err := chromedp.Do(browser, chromedp.EmulateViewport(1360, 1000), chromedp.Navigate(srv.URL+proxyPath+Prefix)); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	step, stop := context.WithTimeout(browser, 30*time.Second)
	defer stop()
	count := fmt.Sprintf(`document.querySelectorAll('#fleet .tile').length === %d`, len(names))
	if _, err := chromedp.Run(step, chromedp.Poll[bool](count)); err != nil {
		n, _ := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll('#fleet .tile').length`))
		t.Fatalf("waiting for %d tiles (the page shows %d): %v", len(names), n, err)
	}
	// The tile of the node about to fail, and the stream, are live.
	victim := names[0]
	healthy := fmt.Sprintf(`#fleet [data-node=%q][data-state="healthy"]`, victim)
	if err := chromedp.Do(step, chromedp.WaitVisible(healthy), chromedp.WaitVisible(`#live[data-live="live"]`)); err != nil {
		t.Fatalf("waiting for a green tile for %s and a live stream: %v", victim, err)
	}

	breakNode(t, env.Client, victim)
	red := fmt.Sprintf(`#fleet [data-node=%q][data-state="unhealthy"]`, victim)
	if err := chromedp.Do(step, chromedp.WaitVisible(red)); err != nil {
		t.Fatalf("waiting for the tile of %s to turn red: %v", victim, err)
	}
	color, err := chromedp.Run(step, chromedp.Evaluate[string](fmt.Sprintf(
		`getComputedStyle(document.querySelector('#fleet [data-node=%q]')).backgroundColor`, victim)))
	if err != nil || color != "rgb(217, 63, 63)" {
		t.Errorf("tile of %s: background %q (%v), want red rgb(217, 63, 63)", victim, color, err)
	}
	if n, err := chromedp.Run(step, chromedp.Evaluate[int](`document.querySelectorAll('#fleet .tile').length`)); err != nil || n != len(names) {
		t.Errorf("after the fault the page shows %d tiles (%v), want %d", n, err, len(names))
	}

	if os.Getenv("GPUHEAL_UPDATE_SCREENSHOT") == "1" {
		writeScreenshot(step, t)
	}
}

func findChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if testproc.InCI() {
			t.Fatalf("chromium not found (%v): install the Debian package chromium", err)
		}
		t.Skipf("skipping: chromium not found (%v); install the Debian package chromium", err)
	}
	return path
}

// newBrowser starts headless Chromium with the flags of DESIGN.md and a
// fresh profile, and stops it when the test ends.
func newBrowser(t *testing.T, chromium string) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first action starts the browser; it gets no deadline, which
	// would end the browser with it.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	return browser
}

// writeScreenshot saves the page to docs/status-page.png.
func writeScreenshot(ctx context.Context, t *testing.T) {
	t.Helper()
	// Let the chart and table settle on the last snapshot.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll('#ttr circle').length > 0`)); err != nil {
		t.Fatalf("waiting for the time-to-recover chart: %v", err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("taking the screenshot: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "docs", "status-page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("writing the screenshot: %v", err)
	}
	t.Logf("wrote %s (%d KiB)", strings.TrimPrefix(path, root+"/"), len(png)/1024)
}
