package cli

import (
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// TestOneSpellingPerFlag walks the command tree: every --out has the
// shorthand -o, and the old --output spelling survives only as a deprecated
// alias, so that no verb documents two names for one flag.
func TestOneSpellingPerFlag(t *testing.T) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("out"); f != nil && f.Shorthand != "o" {
			t.Errorf("%s: --out has shorthand %q, want -o", c.CommandPath(), f.Shorthand)
		}
		if f := c.Flags().Lookup("output"); f != nil {
			if f.Deprecated == "" || c.Flags().Lookup("out") == nil {
				t.Errorf("%s: --output is not a deprecated alias of --out", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRoot(io.Discard, io.Discard))
}
