package clientbench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

// Options configure a client benchmark: the levels, the request shape,
// the test server, the clients measured.
type Options struct {
	// Levels are the concurrent streams measured, in order.
	Levels []int
	// Workload is the request shape of every level (its Streams is set per
	// level).
	Workload Workload
	// Target is an already running test server (with its log kept); empty
	// starts one with ServerCommand.
	Target string
	// ServerCommand starts the test server (argv, no shell) and prints its
	// base URL on the first line of its stdout: spoc bench client --serve.
	// It runs pinned to ServerCPU and is stopped with an interrupt when
	// the benchmark ends.
	ServerCommand []string
	// ServerCPU and ClientCPU are taskset CPU lists for the test server and
	// the external clients; empty runs them unpinned.
	ServerCPU, ClientCPU string
	// External are other clients measured the same way, after spoc's own.
	External []External
	// SkipSelf measures only the External clients.
	SkipSelf bool
	// Log receives the test server's and the external clients' output.
	Log io.Writer
	// Progress, when set, receives every level as it is measured.
	Progress func(*Level)
}

// External is another load client measured like spoc's: Command is run
// through sh with {url} {streams} {warmup} {duration} (seconds)
// {max_tokens} {prompt_tokens} {out} substituted and must write
// result.Record JSON lines, tagged with the X-Request-Id it sent, to {out}.
type External struct {
	Name, Command string
}

// ParseExternal reads NAME=COMMAND.
func ParseExternal(spec string) (External, error) {
	name, command, ok := strings.Cut(spec, "=")
	if !ok || name == "" || command == "" {
		return External{}, fmt.Errorf("want NAME=COMMAND, got %q", spec)
	}
	return External{Name: name, Command: command}, nil
}

// Result is every level measured and each client's accurate ceiling.
type Result struct {
	Levels   []*Level
	Ceilings map[string]int
}

// Run measures spoc's client (unless SkipSelf) and then each External one
// at every level against the test server: the one at Target, or one it
// starts with ServerCommand and stops at the end. With a server of its own
// it meters the server's CPU over each level's measured window.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.SkipSelf && len(o.External) == 0 {
		return Result{}, fmt.Errorf("measuring no client: SkipSelf needs at least one External client")
	}
	serverCPUs := runtime.NumCPU()
	if o.ServerCPU != "" {
		n, err := CountCPUs(o.ServerCPU)
		if err != nil {
			return Result{}, fmt.Errorf("server CPUs: %w", err)
		}
		serverCPUs = n
	}
	url, serverPID := o.Target, 0
	if url == "" {
		srv, err := startServer(ctx, o.ServerCommand, o.ServerCPU, o.Log)
		if err != nil {
			return Result{}, err
		}
		defer srv.stop()
		url, serverPID = srv.url, srv.pid
	}
	// meter measures the server's CPU over a level's measured window.
	meter := func(w Workload) func() float64 {
		if serverPID == 0 {
			return func() float64 { return 0 }
		}
		return MeterCPU(serverPID, w.Warmup+20*time.Millisecond, w.Duration).Cores
	}
	var res Result
	measure := func(name string, n int, run func(Workload) (*Level, error)) error {
		w := o.Workload
		w.Streams = n
		serverCores := meter(w) // for an external client the window starts after its start-up: approximate
		lv, err := run(w)
		if err != nil {
			return fmt.Errorf("%s at %d streams: %w", name, n, err)
		}
		lv.ServerCores, lv.ServerCPUs = serverCores(), serverCPUs
		res.Levels = append(res.Levels, lv)
		if o.Progress != nil {
			o.Progress(lv)
		}
		return nil
	}
	for _, n := range o.Levels {
		if o.SkipSelf {
			break
		}
		if err := measure(GoClient, n, func(w Workload) (*Level, error) { return RunGo(ctx, url, w) }); err != nil {
			return res, err
		}
	}
	for _, x := range o.External {
		for _, n := range o.Levels {
			if err := measure(x.Name, n, func(w Workload) (*Level, error) { return runExternal(ctx, url, x, o.ClientCPU, w, o.Log) }); err != nil {
				return res, err
			}
		}
	}
	res.Ceilings = Ceilings(res.Levels)
	return res, nil
}
