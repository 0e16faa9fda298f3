// Command fakeserver stands in for an inference server in the process
// launcher's tests. It accepts any flags (the vLLM flags a trial renders are
// recorded, not interpreted) and behaves according to its --fake-* flags:
//
//	--port N                listen on 127.0.0.1:N
//	--fake-record FILE      write {"pid":…, "args":[…]} to FILE at start
//	--fake-mode MODE        healthy (default), crash, oom, kv, reject,
//	                        never-healthy, hang-oom
//	--fake-grandchild FILE  spawn a long-sleeping child, write its pid to FILE
//	--fake-ignore-term      ignore SIGTERM (only SIGKILL stops it)
//	--fake-sleep            sleep forever (the grandchild)
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
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
		b, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "args": args})
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
		if err := os.WriteFile(f, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
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
	if err := http.ListenAndServe("127.0.0.1:"+get("--port"), mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// writeAtomic writes b to a temporary file beside path and renames it into
// place. Tests poll for path and may stop the server the moment it appears:
// with a plain os.WriteFile they could see the file created but still empty
// (and the server killed before it wrote), so a reader would decode "".
func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
