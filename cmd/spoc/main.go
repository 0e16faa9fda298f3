// Command spoc plans the capacity of LLM inference deployments: how many
// concurrent users of a stateful multi-turn workload a model on given hardware
// serves within an SLA, and with which engine configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spoc-project/spoc/cmd/spoc/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
