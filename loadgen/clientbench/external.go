package clientbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/spoc-project/spoc/result"
)

// runExternal measures client x at the level w against the test server at
// url: its records, joined with the server's log, and its CPU over its
// whole process lifetime (start-up included).
func runExternal(ctx context.Context, url string, x External, cpus string, w Workload, log io.Writer) (*Level, error) {
	if err := ResetLog(ctx, url); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", "spoc-bench-*.jsonl")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmdline := strings.NewReplacer("{url}", url, "{streams}", strconv.Itoa(w.Streams),
		"{warmup}", strconv.FormatFloat(w.Warmup.Seconds(), 'f', -1, 64),
		"{duration}", strconv.FormatFloat(w.Duration.Seconds(), 'f', -1, 64),
		"{max_tokens}", strconv.Itoa(w.MaxTokens), "{prompt_tokens}", strconv.Itoa(w.PromptTokens),
		"{out}", tmp.Name()).Replace(x.Command)
	argv := pinned([]string{"sh", "-c", cmdline}, cpus)
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Stdout, c.Stderr = log, log
	start := time.Now()
	if err := c.Run(); err != nil {
		return nil, fmt.Errorf("run %q: %w", cmdline, err)
	}
	wall := time.Since(start)
	cpu := 0.0
	if ps := c.ProcessState; ps != nil && wall > 0 {
		cpu = (ps.UserTime() + ps.SystemTime()).Seconds() / wall.Seconds()
	}
	recs, first, err := readExternalRecords(tmp.Name(), x.Name)
	if err != nil {
		return nil, err
	}
	serverLog, err := FetchLog(ctx, url)
	if err != nil {
		return nil, err
	}
	lv := Compare(x.Name, w.Streams, recs, serverLog, result.Window{Start: first, End: first.Add(w.Duration)})
	lv.SetCPU(cpu)
	return lv, nil
}

// readExternalRecords reads a client's records and the earliest scheduled
// time of its measured ones, where its window starts.
func readExternalRecords(path, name string) ([]*result.Record, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	var recs []*result.Record
	var first time.Time
	_, err = result.ReadAll(f, name, func(r *result.Record) error {
		recs = append(recs, r)
		if !r.Warmup && (first.IsZero() || r.Scheduled.Before(first)) {
			first = r.Scheduled
		}
		return nil
	})
	return recs, first, err
}
