package report_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spoc-project/spoc/internal/testharness/testtool"
)

// browser is headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: requests on fd 3, replies and events on fd 4,
// each a JSON message ended by a NUL byte). No websocket, no dependency.
type browser struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	mu     sync.Mutex
	nextID int
	wait   map[int]chan cdpMessage
	events chan cdpMessage
	done   chan struct{}
	stderr strings.Builder
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// chromiumPath finds Chromium; under CI=true a missing browser fails the
// test with how to install it, elsewhere the test is skipped.
func chromiumPath(t *testing.T) string {
	t.Helper()
	return testtool.Find(t, "apt-get install -y chromium", "chromium", "chromium-browser", "google-chrome")
}

// startBrowser starts headless Chromium with networking disabled: no
// background services, every host name unresolvable, a dead proxy.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	toChrome, chromeIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	chromeOut, fromChrome, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{in: chromeIn, wait: map[int]chan cdpMessage{}, events: make(chan cdpMessage, 4096), done: make(chan struct{})}
	b.cmd = exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-first-run", "--no-default-browser-check",
		"--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	b.cmd.Stderr = &lockedWriter{b: &b.stderr, mu: &b.mu}
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	toChrome.Close()
	fromChrome.Close()
	go b.read(chromeOut)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = b.call(ctx, "", "Browser.close", nil)
		select {
		case <-b.done:
		case <-ctx.Done():
		}
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
		chromeIn.Close()
	})
	return b
}

type lockedWriter struct {
	b  *strings.Builder
	mu *sync.Mutex
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (b *browser) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.wait[m.ID]
			delete(b.wait, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case b.events <- m:
		default: // a flood of events must not block replies
		}
	}
}

// call sends one command (to a page session when session is set) and waits
// for its reply.
func (b *browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.wait[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return nil, fmt.Errorf("cdp %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("cdp %s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-b.done:
		return nil, fmt.Errorf("cdp %s: browser exited: %s", method, b.stderrText())
	case <-ctx.Done():
		return nil, fmt.Errorf("cdp %s: %w", method, ctx.Err())
	}
}

func (b *browser) stderrText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stderr.String()
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// pageReport is what loading one file showed.
type pageReport struct {
	// Errors are console errors, uncaught exceptions and browser log errors
	// (a Content-Security-Policy violation is one).
	Errors []string
	// Requests are the URLs the page asked for, other than the file itself.
	Requests []string
	// Screenshot is a PNG of the whole page at the desktop width.
	Screenshot []byte
	// PhoneScreenshot is the top of the page at a phone's width.
	PhoneScreenshot []byte
	// Eval is the result of the probe expression at each width.
	Desktop, Phone, Print probe
}

// probe is measured in the page.
type probe struct {
	ScrollWidth int      `json:"scrollWidth"`
	InnerWidth  int      `json:"innerWidth"`
	Sections    []string `json:"sections"`
	SVGs        int      `json:"svgs"`
	Height      int      `json:"height"`
	// NavDisplay is the computed display of the navigation bar (none when
	// printing).
	NavDisplay string `json:"nav"`
	// Scrolling names the tables that scroll sideways inside their box,
	// as "section: first header".
	Scrolling []string `json:"scrolling"`
}

const probeJS = `JSON.stringify({scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
 sections: Array.from(document.querySelectorAll('section')).map(s => s.id),
 svgs: document.querySelectorAll('svg').length, height: document.documentElement.scrollHeight,
 nav: (document.querySelector('nav') ? getComputedStyle(document.querySelector('nav')).display : ''),
 scrolling: Array.from(document.querySelectorAll('.scroll')).filter(e => e.scrollWidth > e.clientWidth + 1)
   .map(e => (e.closest('section') ? e.closest('section').id : '') + ': ' + (e.querySelector('th') ? e.querySelector('th').textContent : ''))})`

// load opens file in a new tab with the network emulated offline, waits
// for the load event, probes and screenshots it at a laptop's and a
// phone's width, and returns what happened.
func (b *browser) load(ctx context.Context, file string) (*pageReport, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	url := "file://" + abs
	res, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var target struct{ TargetID string }
	_ = json.Unmarshal(res, &target)
	res, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var att struct{ SessionID string }
	_ = json.Unmarshal(res, &att)
	s := att.SessionID
	for _, m := range []string{"Runtime.enable", "Log.enable", "Network.enable", "Page.enable"} {
		if _, err := b.call(ctx, s, m, nil); err != nil {
			return nil, err
		}
	}
	if _, err := b.call(ctx, s, "Network.emulateNetworkConditions", map[string]any{"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}); err != nil {
		return nil, err
	}
	setWidth := func(w, h int, mobile bool) error {
		_, err := b.call(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": h, "deviceScaleFactor": 1, "mobile": mobile})
		return err
	}
	if err := setWidth(1280, 900, false); err != nil {
		return nil, err
	}
	rep := &pageReport{}
	if _, err := b.call(ctx, s, "Page.navigate", map[string]any{"url": url}); err != nil {
		return nil, err
	}
	if err := b.waitLoad(ctx, s, url, rep); err != nil {
		return nil, err
	}
	evalProbe := func(p *probe) error {
		res, err := b.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": probeJS, "returnByValue": true})
		if err != nil {
			return err
		}
		var r struct {
			Result struct{ Value string }
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return err
		}
		return json.Unmarshal([]byte(r.Result.Value), p)
	}
	if err := evalProbe(&rep.Desktop); err != nil {
		return nil, fmt.Errorf("probe page: %w", err)
	}
	shot := func(w, h int) ([]byte, error) {
		res, err := b.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
			"clip": map[string]any{"x": 0, "y": 0, "width": w, "height": h, "scale": 1}})
		if err != nil {
			return nil, err
		}
		var r struct{ Data string }
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, err
		}
		return base64.StdEncoding.DecodeString(r.Data)
	}
	if rep.Screenshot, err = shot(1280, min(max(rep.Desktop.Height, 900), 16000)); err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if err := setWidth(390, 844, true); err != nil {
		return nil, err
	}
	if err := evalProbe(&rep.Phone); err != nil {
		return nil, fmt.Errorf("probe page at phone width: %w", err)
	}
	if rep.PhoneScreenshot, err = shot(390, 1800); err != nil {
		return nil, fmt.Errorf("phone screenshot: %w", err)
	}
	if _, err := b.call(ctx, s, "Emulation.setEmulatedMedia", map[string]any{"media": "print"}); err != nil {
		return nil, err
	}
	if err := evalProbe(&rep.Print); err != nil {
		return nil, fmt.Errorf("probe page as printed: %w", err)
	}
	b.drain(url, rep)
	return rep, nil
}

// waitLoad consumes events until the page's load event, recording errors
// and requests on the way.
func (b *browser) waitLoad(ctx context.Context, session, url string, rep *pageReport) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		select {
		case m := <-b.events:
			if m.SessionID == session && m.Method == "Page.loadEventFired" {
				// Late errors (a CSP report is asynchronous) get a moment.
				time.Sleep(300 * time.Millisecond)
				b.drain(url, rep)
				return nil
			}
			record(m, url, rep)
		case <-b.done:
			return errors.New("browser exited before the page loaded: " + b.stderrText())
		case <-ctx.Done():
			return fmt.Errorf("wait for load of %s: %w", url, ctx.Err())
		}
	}
}

func (b *browser) drain(url string, rep *pageReport) {
	for {
		select {
		case m := <-b.events:
			record(m, url, rep)
		default:
			return
		}
	}
}

// record notes an event that shows a console error or a request.
func record(m cdpMessage, url string, rep *pageReport) {
	switch m.Method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			var parts []string
			for _, a := range p.Args {
				parts = append(parts, fmt.Sprint(a.Value, a.Description))
			}
			rep.Errors = append(rep.Errors, "console."+p.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		rep.Errors = append(rep.Errors, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Level, Source, Text, URL string }
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" {
			rep.Errors = append(rep.Errors, fmt.Sprintf("log %s: %s %s", p.Entry.Source, p.Entry.Text, p.Entry.URL))
		}
	case "Network.requestWillBeSent":
		var p struct {
			Request struct{ URL string }
		}
		_ = json.Unmarshal(m.Params, &p)
		if u := p.Request.URL; u != url && !strings.HasPrefix(u, "data:") && u != "about:blank" {
			rep.Requests = append(rep.Requests, u)
		}
	}
}
