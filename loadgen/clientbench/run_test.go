package clientbench_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/loadgen/clientbench"
	"github.com/spoc-project/spoc/result"
)

// The test binary doubles as the benchmark's two other processes: the test
// server Run starts (as spoc bench client --serve) and an external client
// (as bench/python's clients), so that Run is tested with real processes.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "helper-serve":
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			err := clientbench.Serve(ctx, "127.0.0.1:0", 5*time.Millisecond, 5*time.Millisecond, func(url string) { fmt.Println(url) })
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		case "helper-client":
			if err := externalClient(os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

// externalClient is a client outside spoc's: it writes its records to a
// file for the benchmark to judge. Its arguments are url, streams, warm-up
// and duration in seconds, max tokens, prompt tokens, the records file.
func externalClient(args []string) error {
	if len(args) != 7 {
		return fmt.Errorf("want 7 arguments, got %q", args)
	}
	streams, _ := strconv.Atoi(args[1])
	warmup, _ := strconv.ParseFloat(args[2], 64)
	duration, _ := strconv.ParseFloat(args[3], 64)
	maxTokens, _ := strconv.Atoi(args[4])
	prompt, _ := strconv.Atoi(args[5])
	f, err := os.Create(args[6])
	if err != nil {
		return err
	}
	defer f.Close()
	w := result.NewWriter(f)
	r, err := loadgen.New(loadgen.Options{
		Target: args[0], Model: "bench", Users: streams, Warmup: time.Duration(warmup * float64(time.Second)), Duration: time.Duration(duration * float64(time.Second)),
		RequestTimeout: time.Minute, FirstByteTimeout: 30 * time.Second, RunID: "external", Renderer: loadgen.FillerRenderer{}, HTTPClient: http.DefaultClient,
	})
	if err != nil {
		return err
	}
	if _, err := r.Run(context.Background(), loadgen.SyntheticSource{Turns: 1, PrefixTokens: prompt, MaxTokens: maxTokens}, w); err != nil {
		return err
	}
	return w.Close()
}

// Run starts its own test server, measures spoc's client and an external
// one at each level, meters the server's CPU and stops the server at the
// end.
func TestRunMeasuresEveryClientAgainstItsOwnServer(t *testing.T) {
	var progress []string
	var log strings.Builder
	res, err := clientbench.Run(context.Background(), clientbench.Options{
		Levels:        []int{2, 4},
		Workload:      clientbench.Workload{Warmup: 200 * time.Millisecond, Duration: 600 * time.Millisecond, PromptTokens: 20, MaxTokens: 10},
		ServerCommand: []string{os.Args[0], "helper-serve"},
		External: []clientbench.External{{Name: "other", Command: os.Args[0] +
			" helper-client {url} {streams} {warmup} {duration} {max_tokens} {prompt_tokens} {out}"}},
		Log:      &log,
		Progress: func(l *clientbench.Level) { progress = append(progress, fmt.Sprintf("%s %d", l.Client, l.Streams)) },
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if want := []string{"spoc (Go) 2", "spoc (Go) 4", "other 2", "other 4"}; strings.Join(progress, ", ") != strings.Join(want, ", ") {
		t.Errorf("levels measured: %q, want %q", progress, want)
	}
	for _, l := range res.Levels {
		if l.Timed == 0 || l.Unmatched*10 > l.Timed || l.TokensPerSecond <= 0 || l.ServerCores <= 0 {
			t.Errorf("level %+v: not joined with the server's log, or its CPU not metered", l)
		}
		if l.Client == "other" && l.ClientCores <= 0 {
			t.Errorf("the external client's CPU is not measured: %+v", l)
		}
	}
	if _, ok := res.Ceilings["other"]; !ok || len(res.Ceilings) != 2 {
		t.Errorf("ceilings %v", res.Ceilings)
	}
}

// What Run cannot do is an error before anything starts.
func TestRunRefusesWhatItCannotMeasure(t *testing.T) {
	for _, o := range []clientbench.Options{
		{Levels: []int{1}, SkipSelf: true},
		{Levels: []int{1}, ServerCPU: "x"},
		{Levels: []int{1}},
	} {
		if _, err := clientbench.Run(context.Background(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	if _, err := clientbench.ParseExternal("noname"); err == nil {
		t.Error("ParseExternal accepted a spec without =")
	}
}
