package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spoc-project/spoc/engine/haproxy"
	"github.com/spoc-project/spoc/sim"
	"github.com/spoc-project/spoc/vllm"
)

// FleetRouter is the HAProxy a process fleet runs behind
// (ProcessOptions.Router).
type FleetRouter struct {
	// Binary is HAProxy's path or name on PATH ("haproxy" when empty).
	Binary string
	// Balance is one of haproxy.Balances; Header and HashBalanceFactor
	// configure haproxy.Hash.
	Balance           string
	Header            string
	HashBalanceFactor int
}

// envCUDAVisibleDevices names the GPUs a CUDA process may use.
const envCUDAVisibleDevices = "CUDA_VISIBLE_DEVICES"

// fleet reports whether Start runs one server per replica behind HAProxy.
func (p *Process) fleet() bool { return p.opts.Router != nil && p.opts.Replicas > 1 }

// replicaGPUs is replica r's CUDA_VISIBLE_DEVICES: the r-th group of
// GPUsPerReplica in the visible devices (Env's, else spoc's own, else
// 0 … Replicas·GPUsPerReplica − 1).
func (p *Process) replicaGPUs(r int) (string, error) {
	tp := max(p.opts.GPUsPerReplica, 1)
	n := max(p.opts.Replicas, 1)
	visible, ok := p.opts.Env[envCUDAVisibleDevices]
	if !ok {
		visible, ok = os.LookupEnv(envCUDAVisibleDevices)
	}
	var all []string
	if ok && strings.TrimSpace(visible) != "" && !p.fleet() {
		return visible, nil // one server sees what it is given
	}
	if ok && strings.TrimSpace(visible) != "" {
		all = strings.Split(visible, ",")
		if len(all) < n*tp {
			return "", fmt.Errorf("process engine: %s=%s lists %d GPUs, and %d replicas of %d need %d", envCUDAVisibleDevices, visible, len(all), n, tp, n*tp)
		}
	} else {
		for r := range n {
			for _, g := range sim.ReplicaGPUs(r, tp) {
				all = append(all, strconv.Itoa(g))
			}
		}
	}
	if !p.fleet() {
		return strings.Join(all[:n*tp], ","), nil
	}
	return strings.Join(all[r*tp:(r+1)*tp], ","), nil
}

// replica is one server of a fleet.
type replica struct {
	index int
	port  int
	base  string
	r     *running
}

// fleetServer is a process fleet: one server per replica and HAProxy in
// front of them.
type fleetServer struct {
	p        *Process
	replicas []*replica
	router   *running
	ep       Endpoint
	once     sync.Once
	err      error
}

// startFleet starts the replicas' servers (at once, each waited for until
// healthy), then HAProxy in front of them, and waits until a health check
// through HAProxy answers. Any failure stops what was started and names
// the replica or the router.
func (p *Process) startFleet(ctx context.Context, params Params) (*fleetServer, error) {
	binary, err := haproxy.Find(p.opts.Router.Binary)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	dir, err := p.dirs.next("process")
	if err != nil {
		return nil, err
	}
	f := &fleetServer{p: p, replicas: make([]*replica, p.opts.Replicas)}
	fail := func(err error) (*fleetServer, error) {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.StopTimeout+5*time.Second)
		defer cancel()
		if serr := f.stop(stopCtx); serr != nil {
			p.opts.Logger.Warn("stop failed fleet", "err", serr)
		}
		return nil, err
	}
	errs := make([]error, len(f.replicas))
	var wg sync.WaitGroup
	for i := range f.replicas {
		rep, err := p.startReplica(params, dir, i)
		if err != nil {
			return fail(err)
		}
		f.replicas[i] = rep
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.awaitHealthy(ctx, rep.r, rep.base+p.opts.HealthPath); err != nil {
				errs[i] = fmt.Errorf("replica %d of %d (port %d): %w", i, len(f.replicas), rep.port, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	if err := p.startRouter(ctx, f, binary, dir); err != nil {
		return fail(err)
	}
	p.opts.Logger.Info("fleet started", "engine", "process", "replicas", len(f.replicas), "router", f.ep.BaseURL, "balance", p.opts.Router.Balance, "dir", dir)
	return f, nil
}

// startReplica starts replica i's server with its own port, GPUs and log
// (replica-<i>.log in the fleet's folder).
func (p *Process) startReplica(params Params, dir string, i int) (*replica, error) {
	port, err := freePort(p.opts.Host)
	if err != nil {
		return nil, err
	}
	gpus, err := p.replicaGPUs(i)
	if err != nil {
		return nil, err
	}
	argv, err := p.argv(params, TemplateData{Port: port, Host: p.opts.Host, Model: p.opts.Model, Replica: i, GPUs: gpus})
	if err != nil {
		return nil, err
	}
	env := p.env(argv)
	env[envCUDAVisibleDevices] = gpus
	r, err := p.launch(argv, env, filepath.Join(dir, fmt.Sprintf("replica-%d.log", i)))
	if err != nil {
		return nil, fmt.Errorf("replica %d: %w", i, err)
	}
	p.opts.Logger.Info("replica started", "engine", "process", "replica", i, "pid", r.pgid, "port", port, "gpus", gpus, "log", r.logPath)
	return &replica{index: i, port: port, base: "http://" + net.JoinHostPort(p.opts.Host, strconv.Itoa(port)), r: r}, nil
}

// startRouter writes haproxy.cfg for the replicas, has HAProxy check it,
// starts it and waits until the health path answers through it.
func (p *Process) startRouter(ctx context.Context, f *fleetServer, binary, dir string) error {
	port, err := freePort(p.opts.Host)
	if err != nil {
		return err
	}
	host := p.opts.Host
	if !isLoopback(host) || host == "localhost" {
		host = "127.0.0.1" // the router never listens beyond the machine
	}
	cfg := haproxy.Config{
		Bind: net.JoinHostPort(host, strconv.Itoa(port)), Balance: p.opts.Router.Balance,
		Header: p.opts.Router.Header, HashBalanceFactor: p.opts.Router.HashBalanceFactor,
	}
	for _, rep := range f.replicas {
		cfg.Servers = append(cfg.Servers, net.JoinHostPort(p.opts.Host, strconv.Itoa(rep.port)))
	}
	text, err := cfg.Render()
	if err != nil {
		return fmt.Errorf("router: %w", err)
	}
	file := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if err := haproxy.Check(ctx, binary, file); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	if f.router, err = p.launch(haproxy.Command(binary, file), nil, filepath.Join(dir, "haproxy.log")); err != nil {
		return fmt.Errorf("router: %w", err)
	}
	base := "http://" + cfg.Bind
	if err := p.awaitHealthy(ctx, f.router, base+p.opts.HealthPath); err != nil {
		return fmt.Errorf("router (haproxy, log %s): %w", f.router.logPath, err)
	}
	f.ep = Endpoint{BaseURL: base, Model: p.servedName(), Log: f.router.logPath}
	for _, rep := range f.replicas {
		f.ep.MetricsURLs = append(f.ep.MetricsURLs, rep.base+p.opts.MetricsPath)
		f.ep.MetricsNames = append(f.ep.MetricsNames, fmt.Sprintf("replica-%d", rep.index))
	}
	f.ep.MetricsURLs = append(f.ep.MetricsURLs, p.opts.ExtraMetricsURLs...)
	return nil
}

// launch starts argv in its own process group with env over spoc's own,
// its output going to a new log file at logPath.
func (p *Process) launch(argv []string, env map[string]string, logPath string) (*running, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("process engine: create log: %w", err)
	}
	fmt.Fprintf(logFile, "# spoc: exec %s\n", quoteArgv(argv))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), sortedEnv(env)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("process engine: start %q: %w", argv[0], err)
	}
	r := &running{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{}), logFile: logFile, logPath: logPath}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.done)
	}()
	return r, nil
}

// servedName is the model name requests send.
func (p *Process) servedName() string { return vllm.ServedName(p.opts.Model, p.opts.ServedModelName) }

// describeFleet is what Describe and DryRun add for a fleet.
func (p *Process) describeFleet() string {
	if !p.fleet() {
		return ""
	}
	b := p.opts.Router.Balance
	if b == haproxy.Hash {
		b = "hdr(" + p.opts.Router.Header + ") consistent hash"
	}
	return fmt.Sprintf(" (× %d replicas of %d GPUs behind HAProxy, balance %s)", p.opts.Replicas, max(p.opts.GPUsPerReplica, 1), b)
}

// Endpoint is HAProxy's frontend, with every replica's metrics.
func (f *fleetServer) Endpoint() Endpoint { return f.ep }

// ResetCache resets every replica's prefix cache directly: through the
// router one request would reach one replica and leave the others warm.
// Each replica is reset once it is idle (resetWhenIdle).
func (f *fleetServer) ResetCache(ctx context.Context) error {
	if err := f.Lost(ctx); err != nil {
		return err
	}
	for _, rep := range f.replicas {
		if err := f.p.opts.Flavor.resetWhenIdle(ctx, rep.base, f.ep.MetricsURLs[rep.index]); err != nil {
			return fmt.Errorf("replica %d: %w", rep.index, err)
		}
	}
	return nil
}

// Lost names the first replica (or the router) whose process has exited:
// a fleet that lost one answers through the others, and what it measures
// then is not the configured fleet's capacity.
func (f *fleetServer) Lost(context.Context) error {
	for _, rep := range f.replicas {
		if exited(rep.r) {
			return fmt.Errorf("replica %d of %d (port %d) exited: %s (log %s)", rep.index, len(f.replicas), rep.port,
				lastLine(readTail(rep.r.logPath, logTailBytes)), rep.r.logPath)
		}
	}
	if f.router != nil && exited(f.router) {
		return fmt.Errorf("the router (haproxy) exited: %s (log %s)", lastLine(readTail(f.router.logPath, logTailBytes)), f.router.logPath)
	}
	return nil
}

func exited(r *running) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Stop stops the router, then every replica, once, and frees the
// launcher.
func (f *fleetServer) Stop(ctx context.Context) error {
	f.once.Do(func() {
		f.err = f.stop(ctx)
		f.p.slot.release()
	})
	return f.err
}

func (f *fleetServer) stop(ctx context.Context) error {
	var errs []error
	if f.router != nil {
		errs = append(errs, f.p.stopRunning(ctx, f.router))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rep := range f.replicas {
		if rep == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.p.stopRunning(ctx, rep.r); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("replica %d: %w", rep.index, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopRunning stops one process group as processServer.stop does.
func (p *Process) stopRunning(ctx context.Context, r *running) error {
	return (&processServer{p: p, r: r}).stop(ctx)
}
