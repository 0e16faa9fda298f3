package capacity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/vllm"
)

// EngineUsage counts what live evaluations cost on the engine.
type EngineUsage struct {
	// Starts is the number of servers started (a reused server counts once).
	Starts int `json:"starts"`
	// Seconds is the time servers were up, start-up included.
	Seconds float64 `json:"engine_seconds"`
	// Resets is the number of prefix-cache resets between runs.
	Resets int `json:"cache_resets"`
	// WarmRuns counts the runs on a reused server that refused the reset:
	// each started with the cache the previous run left.
	WarmRuns int `json:"warm_runs,omitempty"`
}

// Usage returns the engine starts and time spent so far (live engines).
func (e *Evaluator) Usage() EngineUsage {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.usage
	if e.cur != nil {
		u.Seconds += time.Since(e.curFrom).Seconds()
	}
	return u
}

// server returns a running server configured with params: the current one
// when its flags are the same (prefix cache reset), else a new one, which
// must pass the preflight. It is the Evaluator's cache of one live server
// (this file: the server, its usage, stopping it). The caller holds e.mu.
func (e *Evaluator) server(ctx context.Context, params map[string]any, load Load) (engine.Server, error) {
	flags, err := vllm.Flags(vllm.Merge(e.setup.Search.BaseParams, params)) // the command line, not how it was spelt
	if err != nil {
		return nil, err
	}
	key := strings.Join(flags, " ")
	if e.cur != nil && e.curKey == key {
		err := e.cur.ResetCache(ctx)
		switch {
		case err == nil:
			e.usage.Resets++
			e.curWarm = ""
			return e.cur, nil
		case errors.Is(err, engine.ErrResetUnsupported):
			e.curWarm = "the server refused the prefix-cache reset (" + err.Error() + "): the run started with the cache the previous run left"
			e.usage.WarmRuns++
			if !e.warnedReset {
				e.warnedReset = true
				e.logger.Warn("the server cannot reset its prefix cache; each run starts with the cache the previous run left", "err", err)
			}
			return e.cur, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		e.logger.Warn("server did not answer the cache reset; restarting it", "err", err)
	}
	if err := e.stopLocked(ctx); err != nil {
		return nil, err
	}
	if watch := e.watcher(); watch != nil && ownsServers(e.launcher) {
		watch(RunStatus{Load: load, Starting: true})
	}
	srv, err := e.launcher.Start(ctx, engine.Params(params))
	if err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	e.cur, e.curKey, e.curFrom, e.curVersion, e.curWarm = srv, key, time.Now(), "", ""
	e.usage.Starts++
	ep := srv.Endpoint()
	if ep.Model == "" {
		ep.Model = e.model()
	}
	if err := Preflight(ctx, ep, e.setup.Client); err != nil {
		if serr := e.stopLocked(ctx); serr != nil {
			e.logger.Warn("stop engine after a failed preflight", "err", serr)
		}
		return nil, err
	}
	e.curVersion = serverVersion(ctx, ep.BaseURL)
	return srv, nil
}

// stopLocked stops the current server, if any. The caller holds e.mu.
func (e *Evaluator) stopLocked(ctx context.Context) error {
	if e.cur == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	err := e.cur.Stop(sctx)
	e.usage.Seconds += time.Since(e.curFrom).Seconds()
	e.cur, e.curKey = nil, ""
	if err != nil {
		return fmt.Errorf("stop engine: %w", err)
	}
	return nil
}

// Close stops the running server, if any. The Evaluator can be used
// again afterwards (the next evaluation starts a server).
func (e *Evaluator) Close(ctx context.Context) error {
	e.mu.Lock()
	err := e.stopLocked(ctx)
	var u EngineUsage
	if e.parent != nil {
		u, e.usage = e.usage, EngineUsage{}
	}
	e.mu.Unlock()
	if e.parent != nil {
		e.parent.mu.Lock()
		e.parent.usage.Starts += u.Starts
		e.parent.usage.Seconds += u.Seconds
		e.parent.usage.Resets += u.Resets
		e.parent.mu.Unlock()
	}
	return err
}

// model is the name requests use when the server does not say: the served
// name, else the model.
func (e *Evaluator) model() string {
	return e.setup.Deployment.RequestModel()
}
