// Package cli maps spoc's command line onto library calls. Each subcommand lives
// in its own file and registers itself with register; the functions here own
// flag parsing conventions, error printing and exit codes.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by every verb (DESIGN.md).
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitSLANotMet   = 3
	ExitInterrupted = 130
)

// ExitError carries an explicit exit code up to Run. Msg may be empty when the
// command already printed what the user needs (for example a failed SLA check).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageErrorf reports bad flags or bad configuration: exit code 2.
func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// usageError wraps err as bad usage or configuration: exit code 2.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// commandFactories holds every subcommand constructor; files add theirs in init.
var commandFactories []func() *cobra.Command

// register adds a subcommand constructor. It is called from init functions in
// the per-verb files so that adding a verb touches one file only.
func register(f func() *cobra.Command) { commandFactories = append(commandFactories, f) }

// NewRoot builds the command tree writing to stdout and stderr.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "spoc",
		Short:         "Capacity planning for LLM inference servers",
		Long:          "spoc tells how many concurrent users of a stateful multi-turn workload an LLM\ninference deployment serves within an SLA, and with which engine configuration.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints the same line as `spoc version`.
		Version: ReadBuildInfo().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(err) })
	cmds := make([]*cobra.Command, 0, len(commandFactories))
	for _, f := range commandFactories {
		cmds = append(cmds, f())
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	root.AddCommand(cmds...)
	return root
}

// Run executes spoc with args and returns the process exit code. Errors are
// printed once, here.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitFailure
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if isCobraUsageError(err) {
		code = ExitUsage
	} else if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		code = ExitInterrupted
	}
	if msg := err.Error(); msg != "" && !(ee != nil && ee.Err == nil) {
		fmt.Fprintf(stderr, "spoc: %s\n", msg)
	}
	return code
}

// isCobraUsageError recognises cobra's own argument errors (unknown command,
// wrong number of arguments), which it does not type.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "invalid argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
