// Command fakeserver stands in for an inference server in the process
// launcher's tests. It accepts any flags (the vLLM flags a trial renders are
// recorded, not interpreted) and behaves according to its --fake-* flags:
//
//	--port N                listen on port N
//	--host H                of address H; like vLLM, every interface without it
//	--fake-record FILE      write {"pid":…, "args":[…], "env":{…}} to FILE at
//	                        start (env: the VLLM_* variables); the file appears
//	                        complete or not at all
//	--fake-mode MODE        healthy (default), crash, oom, kv, reject,
//	                        never-healthy, hang-oom
//	--fake-grandchild FILE  spawn a long-sleeping child, write its pid to FILE
//	--fake-ignore-term      ignore SIGTERM (only SIGKILL stops it)
//	--fake-sleep            sleep forever (the grandchild)
//
// Like vLLM, it serves POST /reset_prefix_cache only when
// VLLM_SERVER_DEV_MODE=1.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	get := func(name string) string {
		for i, a := range args {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	has := func(name string) bool {
		for _, a := range args {
			if a == name {
				return true
			}
		}
		return false
	}
	if has("--fake-ignore-term") {
		signal.Ignore(syscall.SIGTERM)
	}
	if has("--fake-sleep") {
		for {
			time.Sleep(time.Hour)
		}
	}
	if f := get("--fake-record"); f != "" {
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "VLLM_") {
				env[k] = v
			}
		}
		b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "args": args, "env": env})
		if err := writeAtomic(f, b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if f := get("--fake-grandchild"); f != "" {
		gc := []string{"--fake-sleep"}
		if has("--fake-ignore-term") {
			gc = append(gc, "--fake-ignore-term")
		}
		cmd := exec.Command(os.Args[0], gc...)
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := writeAtomic(f, []byte(strconv.Itoa(cmd.Process.Pid))); err != nil {
			os.Exit(2)
		}
	}
	fmt.Println("INFO fakeserver starting")
	switch get("--fake-mode") {
	case "crash":
		fmt.Fprintln(os.Stderr, "RuntimeError: engine core initialization failed")
		os.Exit(1)
	case "oom":
		fmt.Fprintln(os.Stderr, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB")
		os.Exit(1)
	case "kv":
		fmt.Fprintln(os.Stderr, "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")
		os.Exit(1)
	case "reject":
		fmt.Fprintln(os.Stderr, "vllm serve: error: argument --block-size: invalid choice: 7 (choose from 1, 8, 16, 32, 64, 128)")
		os.Exit(2)
	case "hang-oom":
		fmt.Fprintln(os.Stderr, "(VllmWorker rank=1) ERROR torch.OutOfMemoryError: CUDA out of memory.")
	}
	healthy := get("--fake-mode") == "" || get("--fake-mode") == "healthy"
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if !healthy {
			http.Error(w, "loading", http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "vllm:num_requests_running 0")
	})
	if os.Getenv("VLLM_SERVER_DEV_MODE") == "1" {
		mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, r *http.Request) {})
	}
	if err := http.ListenAndServe(net.JoinHostPort(get("--host"), get("--port")), mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writeAtomic writes b to a temporary file next to path and renames it into
// place, so that a reader (a test polling for the file) never sees it
// half-written, even if this process is killed meanwhile.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
