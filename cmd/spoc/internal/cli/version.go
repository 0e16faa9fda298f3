package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the release version; set with -ldflags "-X .../internal/cli.Version=v1.2.3".
// When it is left at "dev", the module version recorded in the build is used.
var Version = "dev"

func init() { register(newVersionCmd) }

// BuildInfo says which build of spoc is running: what `spoc version` and
// `spoc --version` print.
type BuildInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`      // vcs.revision, "+dirty" appended when the tree was modified
	CommitTime string `json:"commit_time,omitempty"` // vcs.time, RFC 3339
	GoVersion  string `json:"go"`
}

// ReadBuildInfo collects the version, VCS commit and Go version of the running
// binary from debug.ReadBuildInfo. The commit is empty when the binary was not
// built from a VCS checkout (go run, -buildvcs=false, a test binary).
func ReadBuildInfo() BuildInfo {
	info := BuildInfo{Version: Version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.CommitTime = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && info.Commit != "" {
		info.Commit += "+dirty"
	}
	return info
}

// String is the one-line form: "spoc v1.2.3 commit 0123456789ab+dirty (2026-01-02T03:04:05Z, go1.23.0)".
func (b BuildInfo) String() string {
	s := "spoc " + b.Version
	if b.Commit != "" {
		rev, dirty := b.Commit, ""
		if n := len(rev) - len("+dirty"); n > 0 && rev[n:] == "+dirty" {
			rev, dirty = rev[:n], "+dirty"
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		s += " commit " + rev + dirty
	}
	s += " ("
	if b.CommitTime != "" {
		s += b.CommitTime + ", "
	}
	return s + b.GoVersion + ")"
}

// printVersion writes the build information as one line or as JSON.
func printVersion(w io.Writer, asJSON bool) error {
	info := ReadBuildInfo()
	if asJSON {
		return writeJSON(w, info)
	}
	_, err := fmt.Fprintln(w, info.String())
	return err
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print spoc's version, commit, commit date and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printVersion(cmd.OutOrStdout(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

// writeJSON prints v as indented JSON; every verb's --json goes through it.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
