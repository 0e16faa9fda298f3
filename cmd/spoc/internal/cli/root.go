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
// printed once, here: as a line "spoc: ..." on stderr and, when the verb ran
// with --json and printed no result, as one JSON object
// {"error": "...", "code": N} on stdout, so that stdout under --json always
// holds exactly one JSON document.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	out := &countingWriter{w: stdout}
	root := NewRoot(out, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
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
	msg := err.Error()
	silent := ee != nil && ee.Err == nil // the verb already printed what the user needs
	if !silent && msg != "" {
		fmt.Fprintf(stderr, "spoc: %s\n", msg)
	}
	if out.n == 0 && jsonRequested(cmd, args) {
		if silent {
			msg = exitCodeMeaning(code)
		}
		_ = writeJSON(stdout, JSONError{Error: msg, Code: code})
	}
	return code
}

// JSONError is what a verb run with --json prints on stdout when it fails
// without printing a result.
type JSONError struct {
	Error string `json:"error"`
	Code  int    `json:"code"` // the process exit code
}

// exitCodeMeaning names an exit code for a JSON error whose verb printed its
// explanation elsewhere.
func exitCodeMeaning(code int) string {
	switch code {
	case ExitUsage:
		return "bad usage or configuration"
	case ExitSLANotMet:
		return "SLA not met"
	case ExitInterrupted:
		return "interrupted"
	}
	return fmt.Sprintf("exit status %d", code)
}

// jsonRequested reports whether the command ran with --json. The parsed flag
// answers when flag parsing got that far; otherwise (an unknown flag or a bad
// value before --json, an unknown verb) the raw arguments do.
func jsonRequested(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// countingWriter counts what a verb wrote, so that Run prints a JSON error
// only where no JSON result was printed.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
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
