package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// docShots are the README's pictures of the report: the top two screens of
// the default plan's report (testdata/plan.json) on a laptop and a phone.
var docShots = []struct {
	file          string
	width, height int
}{
	{"report-1280.png", 1280, 1800},
	{"report-390.png", 390, 1688},
}

// TestDocScreenshots renders the default plan's report in headless Chromium
// and checks both README pictures can be produced: a non-blank PNG of the
// right width. With -update it rewrites docs/report-1280.png and
// docs/report-390.png (look at them before committing).
func TestDocScreenshots(t *testing.T) {
	chromiumPath(t)
	b := startBrowser(t)
	path := writeReport(t, t.TempDir(), fixture(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := b.load(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i, shot := range [][]byte{rep.Screenshot, rep.PhoneScreenshot} {
		want := docShots[i]
		top := cropTop(t, shot, want.height)
		checkPNG(t, want.file, top, want.width, want.height)
		if len(top) > 1<<20 {
			t.Errorf("%s: %d bytes, want under 1 MiB", want.file, len(top))
		}
		dst := filepath.Join("..", "docs", want.file)
		if *update {
			if err := os.WriteFile(dst, top, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", dst)
			continue
		}
		raw, err := os.ReadFile(dst)
		if err != nil {
			t.Fatalf("%v (go test ./report -run TestDocScreenshots -update writes it)", err)
		}
		checkPNG(t, dst, raw, want.width, want.height)
	}
}

// cropTop keeps the top height pixels of a screenshot, re-encoded at the
// best compression (the pictures live in the repository).
func cropTop(t *testing.T, raw []byte, height int) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	r := img.Bounds()
	r.Max.Y = min(r.Max.Y, r.Min.Y+height)
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		t.Fatalf("screenshot of type %T cannot be cropped", img)
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, sub.SubImage(r)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
