package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/plan"
	"github.com/spoc-project/spoc/report"
)

var screenshotDir = flag.String("screenshots", "", "also write the browser tests' screenshots to this folder")

// writeReport renders d into dir/report.html.
func writeReport(t *testing.T, dir string, d *plan.Summary) string {
	t.Helper()
	var buf bytes.Buffer
	if err := report.HTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// clone deep-copies d through JSON, as spoc report reads it back.
func clone(t *testing.T, d *plan.Summary) *plan.Summary {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var c plan.Summary
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func saveShot(t *testing.T, name string, png []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if *screenshotDir != "" {
		if err := os.MkdirAll(*screenshotDir, 0o755); err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(*screenshotDir, name)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkPNG decodes a screenshot and checks its size and that it is not
// blank.
func checkPNG(t *testing.T, name string, raw []byte, width, minHeight int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", name, err)
	}
	b := img.Bounds()
	if b.Dx() != width || b.Dy() < minHeight {
		t.Errorf("%s: %dx%d, want width %d and height ≥ %d", name, b.Dx(), b.Dy(), width, minHeight)
	}
	colors := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colors) < 16; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[r>>12<<8|g>>12<<4|bl>>12] = true
		}
	}
	if len(colors) < 8 {
		t.Errorf("%s: only %d distinct colours: a blank page?", name, len(colors))
	}
}

// TestBrowserDefaultPlanReport opens the report of the default plan in
// headless Chromium with the network off — run in-process with --quick (plus
// the kernel section of the trace fixture), and the full default plan's data
// in testdata, and a plan whose every name is markup — and checks: no console error, no request leaves the file,
// every section renders, the page does not scroll sideways on a laptop or a
// phone, and screenshots are written (-screenshots DIR keeps them).
func TestBrowserDefaultPlanReport(t *testing.T) {
	chromiumPath(t)
	type page struct {
		name string
		d    *plan.Summary
		svgs int
	}
	pages := []page{{"default", fixture(t), 20}, {"hostile names", hostile(), 8}}
	if !testing.Short() { // the in-process quick plan takes seconds
		quick := clone(t, quickPlanData(t))
		addKernels(t, quick)
		pages = append([]page{{"quick", quick, 20}}, pages...)
	}
	b := startBrowser(t)
	for _, tc := range pages {
		t.Run(tc.name, func(t *testing.T) {
			path := writeReport(t, t.TempDir(), tc.d)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			rep, err := b.load(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Errors) > 0 {
				t.Errorf("console errors:\n%s", strings.Join(rep.Errors, "\n"))
			}
			if len(rep.Requests) > 0 {
				t.Errorf("requests left the file:\n%s", strings.Join(rep.Requests, "\n"))
			}
			for _, id := range []string{"verdict", "workload", "search", "sweep", "telemetry", "kernels", "compare", "assumptions", "notes"} {
				if !slices.Contains(rep.Desktop.Sections, id) {
					t.Errorf("section %q not rendered; sections: %v", id, rep.Desktop.Sections)
				}
			}
			if rep.Desktop.SVGs < tc.svgs {
				t.Errorf("%d SVG charts rendered, want ≥ %d", rep.Desktop.SVGs, tc.svgs)
			}
			if rep.Phone.ScrollWidth > rep.Phone.InnerWidth+1 {
				t.Errorf("at phone width the page scrolls sideways: scrollWidth %d > %d", rep.Phone.ScrollWidth, rep.Phone.InnerWidth)
			}
			if rep.Desktop.ScrollWidth > rep.Desktop.InnerWidth+1 {
				t.Errorf("at laptop width the page scrolls sideways: scrollWidth %d > %d", rep.Desktop.ScrollWidth, rep.Desktop.InnerWidth)
			}
			// the workload, telemetry and calibration tables fit a laptop's
			// width; wider ones (the sweep's 18 columns) scroll inside
			// their box
			for _, sc := range rep.Desktop.Scrolling {
				if strings.HasPrefix(sc, "workload:") || strings.HasPrefix(sc, "telemetry:") || strings.HasPrefix(sc, "calibration:") {
					t.Errorf("at laptop width a table scrolls sideways: %s", sc)
				}
			}
			t.Logf("tables that scroll sideways at 1280 px: %v", rep.Desktop.Scrolling)
			if rep.Desktop.NavDisplay == "none" || rep.Print.NavDisplay != "none" {
				t.Errorf("navigation display: %q on screen, %q in print; want it shown on screen and hidden in print", rep.Desktop.NavDisplay, rep.Print.NavDisplay)
			}
			checkPNG(t, "desktop screenshot", rep.Screenshot, 1280, 2000)
			checkPNG(t, "phone screenshot", rep.PhoneScreenshot, 390, 1800)
			t.Logf("screenshots: %s, %s", saveShot(t, "report-"+strings.ReplaceAll(tc.name, " ", "-")+"-desktop.png", rep.Screenshot), saveShot(t, "report-"+strings.ReplaceAll(tc.name, " ", "-")+"-phone.png", rep.PhoneScreenshot))
		})
	}
}

// TestBrowserHarnessDetectsViolations proves the browser test can fail: a
// page that logs a console error and loads a remote image, with and without
// the report's Content-Security-Policy, is caught.
func TestBrowserHarnessDetectsViolations(t *testing.T) {
	chromiumPath(t)
	b := startBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, head, body string
		wantRequest      bool
	}{
		{"no policy", "", `<img src="http://spoc.invalid/logo.png"><script>console.error("boom")</script>`, true},
		{"report policy", `<meta http-equiv="Content-Security-Policy" content="` + report.ContentSecurityPolicy + `">`, `<img src="https://spoc.invalid/font.png">`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.html")
			page := "<!doctype html><html><head>" + tc.head + "</head><body><p>bad</p>" + tc.body + "</body></html>"
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := b.load(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Errors) == 0 {
				t.Error("no console error detected")
			}
			if tc.wantRequest && len(rep.Requests) == 0 {
				t.Error("the remote request was not detected")
			}
			t.Logf("errors: %q; requests: %q", rep.Errors, rep.Requests)
		})
	}
}
