package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"github.com/spoc-project/spoc/engine/haproxy"
	"github.com/spoc-project/spoc/vllm"
)

// Process defaults, used when the corresponding ProcessOptions field is zero.
const (
	DefaultHealthPath    = vllm.PathHealth
	DefaultMetricsPath   = vllm.PathMetrics
	DefaultHealthTimeout = 20 * time.Minute
	DefaultStopTimeout   = 30 * time.Second
	DefaultPollInterval  = 250 * time.Millisecond
)

// logTailBytes is how much of a failed server's log is read to classify it.
const logTailBytes = 64 << 10

// ProcessOptions configure a Process launcher.
type ProcessOptions struct {
	// Command is the argv template (no shell). Each argument is a
	// text/template over TemplateData: {{.Port}}, {{.Model}}, {{.Host}}.
	// The trial's flags are appended after it.
	Command []string
	// Env adds environment variables to spoc's own environment.
	Env map[string]string
	// Model is the model name given to the template and, unless
	// ServedModelName is set, sent in requests.
	Model           string
	ServedModelName string
	// BaseParams are flags applied to every start (engine.params of the
	// configuration); the trial's parameters override them.
	BaseParams Params
	// HealthPath is polled until it answers 200; MetricsPath is the
	// server's Prometheus endpoint. ExtraMetricsURLs (GPU exporters) are
	// added to every Endpoint.
	HealthPath       string
	MetricsPath      string
	ExtraMetricsURLs []string
	// HealthTimeout bounds the wait for health; StopTimeout is the grace
	// period between SIGTERM and SIGKILL; PollInterval spaces health checks.
	HealthTimeout time.Duration
	StopTimeout   time.Duration
	PollInterval  time.Duration
	// Host is the loopback address the server binds (default 127.0.0.1):
	// unless the command sets --host (vllm.FlagHost) or uses {{.Host}},
	// Start appends --host Host, since vLLM without it binds every
	// interface, development routes included.
	Host string
	// Dir receives one folder per started server (server-001, …) with its
	// log; a temporary folder per server when empty.
	Dir    string
	Logger *slog.Logger
	// Replicas, with a Router, makes Start run one server per replica
	// behind HAProxy (fleet.go); 0 or 1 runs one server.
	Replicas int
	// GPUsPerReplica is each replica's tensor-parallel group: replica r
	// gets the r-th group of CUDA_VISIBLE_DEVICES (spoc's own, or
	// Env's), 0 … Replicas·GPUsPerReplica − 1 when neither sets it.
	GPUsPerReplica int
	// Router is the HAProxy in front of the replicas.
	Router *FleetRouter
	// Flavor is the server's dialect: how parameters become arguments,
	// whether --host is added, the cache-reset route. The zero Flavor is
	// vLLM's.
	Flavor Flavor
}

// TemplateData is what each argument of the command template sees. In a
// fleet (ProcessOptions.Replicas) Replica is the replica's index (0, 1, …)
// and GPUs its GPU list as CUDA_VISIBLE_DEVICES gives it ("2,3"); one
// server is replica 0 with every GPU.
type TemplateData struct {
	Port    int
	Host    string
	Model   string
	Replica int
	GPUs    string
}

// Process runs the server as a local command in its own process group.
type Process struct {
	opts ProcessOptions
	tmpl []*template.Template

	slot slot
	dirs *serverDirs
	// anyHost leaves the bind address to the command (the Kubernetes
	// launcher renders a pod's args, which must listen on the pod's IP).
	anyHost bool
}

var _ Launcher = (*Process)(nil)

// running is one started server.
type running struct {
	cmd     *exec.Cmd
	pgid    int
	done    chan struct{} // closed once the leader has been reaped
	waitErr error
	logFile *os.File
	logPath string
}

// NewProcess validates opts, parses the command template and returns the
// launcher.
func NewProcess(opts ProcessOptions) (*Process, error) {
	if len(opts.Command) == 0 {
		return nil, errors.New("process engine: empty command")
	}
	if opts.HealthPath == "" {
		opts.HealthPath = DefaultHealthPath
	}
	if opts.MetricsPath == "" {
		opts.MetricsPath = DefaultMetricsPath
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = DefaultHealthTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Flavor = opts.Flavor.or()
	p := &Process{opts: opts, dirs: &serverDirs{root: opts.Dir}}
	for i, a := range opts.Command {
		t, err := template.New(fmt.Sprintf("command[%d]", i)).Option("missingkey=error").Parse(a)
		if err != nil {
			return nil, fmt.Errorf("process engine: parse command[%d] %q: %w", i, a, err)
		}
		p.tmpl = append(p.tmpl, t)
	}
	if _, err := p.Argv(nil, 8000); err != nil {
		return nil, err
	}
	return p, nil
}

// Check verifies that the command's executable can be found, so that a
// typo fails once instead of failing every trial.
func (p *Process) Check() error {
	argv, err := p.Argv(nil, 0)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("process engine: command %q: %w", argv[0], err)
	}
	if p.fleet() {
		if _, err := haproxy.Find(p.opts.Router.Binary); err != nil {
			return err
		}
	}
	return nil
}

// Kind returns "process".
func (p *Process) Kind() string { return "process" }

// Argv returns the command that Start would run for params on port: the
// rendered template followed by the merged base and trial flags. A trial
// parameter that the template already sets is an error, since the search
// would silently not vary it.
func (p *Process) Argv(params Params, port int) ([]string, error) {
	gpus, err := p.replicaGPUs(0)
	if err != nil {
		return nil, err
	}
	return p.argv(params, TemplateData{Port: port, Host: p.opts.Host, Model: p.opts.Model, GPUs: gpus})
}

// DryRun shows the command Start would run for params, with the port it
// would pick at start as <port>.
func (p *Process) DryRun(params Params) (string, error) {
	argv, err := p.argv(params, struct {
		Port, Host, Model, Replica, GPUs string
	}{"<port>", p.opts.Host, p.opts.Model, "<replica>", "<gpus>"})
	if err != nil {
		return "", err
	}
	return quoteArgv(argv) + p.describeFleet(), nil
}

func (p *Process) argv(params Params, data any) ([]string, error) {
	argv := make([]string, 0, len(p.tmpl)+2*len(params))
	for i, t := range p.tmpl {
		var b bytes.Buffer
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("process engine: render command[%d]: %w", i, err)
		}
		argv = append(argv, b.String())
	}
	fl := p.opts.Flavor
	if !fl.NamedFlags {
		// spoc knows nothing of this server's flags: the command and the
		// parameters' own templates are the whole command line
		flags, err := fl.Args(Params(vllm.Merge(p.opts.BaseParams, params)))
		if err != nil {
			return nil, err
		}
		return append(argv, flags...), nil
	}
	if !p.anyHost && !vllm.HasFlag(argv, vllm.FlagHost) && !p.templateUsesHost() {
		argv = append(argv, "--"+vllm.FlagHost, p.opts.Host)
	}
	for k := range params {
		if vllm.HasFlag(argv, k) {
			return nil, fmt.Errorf("process engine: the command already sets --%s, which the trial varies; remove it from process.command", vllm.FlagName(k))
		}
	}
	flags, err := fl.Args(Params(vllm.Merge(withoutFlags(p.opts.BaseParams, argv), params)))
	if err != nil {
		return nil, err
	}
	return append(argv, flags...), nil
}

// Start runs the command with the flags p over the base flags, its output
// going to server.log in a new server folder under ProcessOptions.Dir, and
// waits until the health path answers 200. If the process exits first, or
// health times out, the process group is stopped and a *Failure says why.
func (p *Process) Start(ctx context.Context, params Params) (Server, error) {
	if err := p.slot.take("process"); err != nil {
		return nil, err
	}
	if p.fleet() {
		srv, err := p.startFleet(ctx, params)
		if err != nil {
			p.slot.release()
			return nil, err
		}
		return srv, nil
	}
	srv, err := p.start(ctx, params)
	if err != nil {
		p.slot.release()
		return nil, err
	}
	return srv, nil
}

func (p *Process) start(ctx context.Context, params Params) (*processServer, error) {
	port, err := freePort(p.opts.Host)
	if err != nil {
		return nil, err
	}
	argv, err := p.Argv(params, port)
	if err != nil {
		return nil, err
	}
	logPath, logFile, err := p.dirs.createServerLog("process")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "# spoc: exec %s\n", quoteArgv(argv))

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), sortedEnv(p.env(argv))...)
	// The log file itself (not a pipe) is the child's output, so that Wait
	// never blocks on grandchildren that inherited the descriptors.
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
	p.opts.Logger.Info("server started", "engine", "process", "pid", r.pgid, "port", port, "log", logPath)

	base := "http://" + net.JoinHostPort(p.opts.Host, strconv.Itoa(port))
	srv := &processServer{p: p, r: r, ep: Endpoint{
		BaseURL:     base,
		MetricsURLs: append([]string{base + p.opts.MetricsPath}, p.opts.ExtraMetricsURLs...),
		Model:       vllm.ServedName(p.opts.Model, p.opts.ServedModelName),
		Log:         logPath,
	}}
	if err := p.awaitHealthy(ctx, r, base+p.opts.HealthPath); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.StopTimeout+5*time.Second)
		defer cancel()
		if serr := srv.stop(stopCtx); serr != nil {
			p.opts.Logger.Warn("stop failed server", "err", serr)
		}
		return nil, err
	}
	return srv, nil
}

// env is the configured environment plus VLLM_SERVER_DEV_MODE=1, which
// makes vLLM serve /reset_prefix_cache, unless the configuration sets it.
// The development routes (/sleep, /collective_rpc, …) have no
// authentication, so spoc opens them only on a server bound to loopback;
// a command that binds another address keeps them closed, and the prefix
// cache is then not reset between runs (the plan flags those runs warm).
func (p *Process) env(argv []string) map[string]string {
	env := make(map[string]string, len(p.opts.Env)+1)
	for k, v := range p.opts.Env {
		env[k] = v
	}
	devMode := p.opts.Flavor.DevModeEnv
	if _, ok := env[devMode]; ok || devMode == "" {
		return env
	}
	host := p.opts.Host
	if h, ok := vllm.FlagValue(argv, vllm.FlagHost); ok {
		host = h
	}
	if !isLoopback(host) {
		p.opts.Logger.Warn("process engine: the server binds "+strconv.Quote(host)+", not loopback: "+devMode+
			" stays unset so that vLLM's unauthenticated development routes are not opened to the network; the prefix cache is not reset between runs"+
			" (engine.process.env "+devMode+": \"1\" opens them anyway)", "host", host)
		return env
	}
	env[devMode] = "1"
	return env
}

// templateUsesHost reports whether the command places {{.Host}} itself (a
// server whose bind flag is not --host).
func (p *Process) templateUsesHost() bool {
	for _, a := range p.opts.Command {
		if strings.Contains(a, ".Host") {
			return true
		}
	}
	return false
}

// isLoopback reports whether host names only the local machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// processServer is a running server process.
type processServer struct {
	p    *Process
	r    *running
	ep   Endpoint
	once sync.Once
	err  error
}

// Endpoint returns where the server listens.
func (s *processServer) Endpoint() Endpoint { return s.ep }

// ResetCache posts /reset_prefix_cache; a server that has exited says so.
func (s *processServer) ResetCache(ctx context.Context) error {
	select {
	case <-s.r.done:
		return fmt.Errorf("process engine: server (pid %d) has exited: %s", s.r.pgid, lastLine(readTail(s.r.logPath, logTailBytes)))
	default:
	}
	return s.p.opts.Flavor.resetWhenIdle(ctx, s.ep.BaseURL, s.ep.MetricsURLs[0])
}

// Exited reports whether the server process has ended.
func (s *processServer) Exited() bool {
	select {
	case <-s.r.done:
		return true
	default:
		return false
	}
}

// Stop stops the server once and frees the launcher for the next start.
func (s *processServer) Stop(ctx context.Context) error {
	s.once.Do(func() {
		s.err = s.stop(ctx)
		s.p.slot.release()
	})
	return s.err
}

// awaitHealthy polls url until it answers 200, the process exits, ctx ends
// or the health timeout passes.
func (p *Process) awaitHealthy(ctx context.Context, r *running, url string) error {
	client := &http.Client{Timeout: max(time.Second, 4*p.opts.PollInterval)}
	deadline := time.NewTimer(p.opts.HealthTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(p.opts.PollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		lastErr = probe(ctx, client, url)
		if lastErr == nil {
			return nil
		}
		select {
		case <-r.done:
			return p.exitFailure(r)
		case <-ctx.Done():
			return fmt.Errorf("process engine: wait for %s: %w", url, ctx.Err())
		case <-deadline.C:
			// A hung server may have logged why (a tensor-parallel worker
			// that ran out of memory leaves the API server waiting).
			reason, detail := Classify(readTail(r.logPath, logTailBytes))
			if !reason.Infeasible() {
				reason = ReasonHealthTimeout
				detail = fmt.Sprintf("no 200 from %s within %s (last: %v)", url, p.opts.HealthTimeout, lastErr)
			}
			return &Failure{Reason: reason, Detail: detail, ExitCode: -1, Log: r.logPath}
		case <-tick.C:
		}
	}
}

// exitFailure classifies a server that exited before becoming healthy.
func (p *Process) exitFailure(r *running) error {
	code := -1
	if r.cmd.ProcessState != nil {
		code = r.cmd.ProcessState.ExitCode()
	}
	reason, detail := Classify(readTail(r.logPath, logTailBytes))
	if detail == "" && r.waitErr != nil {
		detail = r.waitErr.Error()
	}
	return &Failure{Reason: reason, Detail: detail, ExitCode: code, Log: r.logPath}
}

func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// Stop sends SIGTERM to the server's process group, waits up to the stop
// timeout (or until ctx ends) for every process of the group to exit, then
// sends SIGKILL. It returns once the group is gone.
func (s *processServer) stop(ctx context.Context) error {
	p, r := s.p, s.r
	defer r.logFile.Close()
	if err := signalGroup(r.pgid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("process engine: stop server (pid %d): %w", r.pgid, err)
	}
	grace := time.NewTimer(p.opts.StopTimeout)
	defer grace.Stop()
	if !waitGroupGone(r, grace.C, ctx.Done()) {
		p.opts.Logger.Warn("server did not stop in time; killing its process group", "pid", r.pgid, "grace", p.opts.StopTimeout)
		if err := signalGroup(r.pgid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("process engine: kill server (pid %d): %w", r.pgid, err)
		}
		// SIGKILL cannot be ignored; the wait is only for the kernel.
		final := time.NewTimer(10 * time.Second)
		defer final.Stop()
		if !waitGroupGone(r, final.C, nil) {
			return fmt.Errorf("process engine: server process group %d still alive after SIGKILL", r.pgid)
		}
	}
	fmt.Fprintf(r.logFile, "# spoc: server stopped (%v)\n", r.cmd.ProcessState)
	return nil
}

// waitGroupGone waits until the leader is reaped and no process of its
// group runs, or until one of the channels fires (false).
func waitGroupGone(r *running, timeout <-chan time.Time, cancel <-chan struct{}) bool {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.done:
			if !groupAlive(r.pgid) {
				return true
			}
		default:
		}
		select {
		case <-timeout:
			return false
		case <-cancel:
			return false
		case <-tick.C:
		}
	}
}

// freePort asks the kernel for an unused TCP port on host. The port is free
// when returned; a server that loses the race fails to bind and exits, which
// Start reports.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readTail returns up to n bytes from the end of the file at path.
func readTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

func sortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// quoteArgv renders argv for a log line, quoting arguments with spaces.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$<>") {
			q[i] = strconv.Quote(a)
		} else {
			q[i] = a
		}
	}
	return strings.Join(q, " ")
}

// Describe is the command template, as configured.
func (p *Process) Describe() string { return quoteArgv(p.opts.Command) + p.describeFleet() }
