package serve

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/spoc-project/spoc/sglang"
	"github.com/spoc-project/spoc/vllm"
)

// apiError is an OpenAI/vLLM-style error body.
type apiError struct {
	Object  string `json:"object"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(apiError{Object: "error", Message: msg, Type: typ, Code: code})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+vllm.PathChatCompletions, func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, true) })
	mux.HandleFunc("POST "+vllm.PathCompletions, func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, false) })
	mux.HandleFunc("GET "+vllm.PathModels, s.serveModels)
	mux.HandleFunc("GET "+vllm.PathHealth, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET "+vllm.PathVersion, s.serveVersion)
	mux.HandleFunc("POST "+vllm.PathTokenize, s.serveTokenize)
	switch {
	case s.cfg.SGLangFaithful:
		mux.HandleFunc("GET "+sglang.PathFlushCache, s.serveFlushCache)
		mux.HandleFunc("POST "+sglang.PathFlushCache, s.serveFlushCache)
	case s.cfg.VLLMFaithful && !s.cfg.DevMode:
		// vLLM registers the route only in dev mode; FastAPI answers any
		// other path with 404 and this body.
		mux.HandleFunc(vllm.PathResetPrefixCache, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"detail":"Not Found"}`)
		})
	default:
		mux.HandleFunc("POST "+vllm.PathResetPrefixCache, s.serveResetPrefixCache)
	}
	if !s.cfg.SGLangFaithful || s.cfg.EnableMetrics {
		// SGLang serves its metrics only with --enable-metrics
		mux.Handle("GET "+vllm.PathMetrics, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	}
	mux.Handle("GET /dcgm/metrics", promhttp.HandlerFor(s.dcgm, promhttp.HandlerOpts{}))
	return mux
}

// serveVersion answers as vLLM's /version does, with a version no vLLM
// release has, so a client can tell the simulator from a real server; the
// vLLM-faithful mode adds " (vllm-faithful)", so that a test can also tell
// the stand-in process from spoc's in-process simulator.
func (s *Server) serveVersion(w http.ResponseWriter, _ *http.Request) {
	v := s.cfg.Version
	if v == "" {
		v = "dev"
	}
	v = "spoc-sim " + v
	switch {
	case s.cfg.VLLMFaithful:
		v += " (vllm-faithful)"
	case s.cfg.SGLangFaithful:
		v += " (sglang-faithful)"
	}
	writeJSON(w, map[string]string{"version": v})
}

// serveResetPrefixCache empties the simulated prefix cache. The default
// mode always has the route (vLLM and the vLLM-faithful mode only in dev
// mode, see vllm.PathResetPrefixCache) and, like vLLM, answers 200 even when a replica refused because requests
// still hold KV blocks; the refusal is logged.
func (s *Server) serveResetPrefixCache(w http.ResponseWriter, _ *http.Request) {
	if !s.resetPrefixCache() {
		s.log.Warn("prefix cache not reset: requests still hold KV blocks")
	}
	w.WriteHeader(http.StatusOK)
}

// serveFlushCache is SGLang's /flush_cache: it empties the simulated
// prefix cache, and, as SGLang does, refuses with 400 while requests run or
// wait.
func (s *Server) serveFlushCache(w http.ResponseWriter, _ *http.Request) {
	if !s.idle() || !s.resetPrefixCache() {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "Cache not flushed.\n(When there are running or waiting requests, the operation will not be performed.)\n")
		return
	}
	_, _ = io.WriteString(w, "Cache flushed.\n")
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.model, "object": "model", "created": s.start.Unix(), "owned_by": "spoc-sim",
		"root": s.model, "max_model_len": s.c.MaxModelLen(),
	}}})
}
