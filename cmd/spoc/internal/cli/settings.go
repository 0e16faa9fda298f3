package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/spoc-project/spoc/config"
	"github.com/spoc-project/spoc/sim"
)

// keyFlag binds a command-line flag to the configuration key it sets: a
// flag the user gave becomes a config.Setting of that key, decoded and
// validated with the file by config.Load, so that every verb overrides its
// configuration one way and an error names the flag and the key.
type keyFlag struct {
	flag, key string
	// value turns the flag's text into the value as the file would write
	// it (YAML); nil writes it by the flag's type.
	value func(string) (string, error)
	// each repeated value adds one item to the list at key (a repeatable
	// flag such as --throttle, which adds to the configured list).
	each bool
}

// keyFlags is a verb's table of flags that set configuration keys.
type keyFlags []keyFlag

// settings returns a setting for every flag of k the command line gave, in
// the table's order.
func (k keyFlags) settings(fs *pflag.FlagSet) ([]config.Setting, error) {
	var out []config.Setting
	for _, b := range k {
		f := fs.Lookup(b.flag)
		if f == nil {
			panic("cli: no flag --" + b.flag + " for " + b.key) // a table that names a flag its verb lacks
		}
		if !f.Changed {
			continue
		}
		src := "--" + b.flag
		texts := []string{f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok && b.each {
			texts = sv.GetSlice()
		}
		for _, text := range texts {
			v, err := b.yaml(f, text)
			var ee *ExitError
			if errors.As(err, &ee) {
				return nil, err // it names the flag already
			} else if err != nil {
				return nil, usageErrorf("%s: %v", src, err)
			}
			out = append(out, config.Setting{Key: b.key, Value: v, Append: b.each, Source: src})
		}
	}
	return out, nil
}

// yaml writes a flag's text as the file would: strings quoted, so that a
// value reads as the string it is whatever YAML would make of it bare,
// lists in brackets, numbers, booleans and durations as they are.
func (b keyFlag) yaml(f *pflag.Flag, text string) (string, error) {
	if b.value != nil {
		return b.value(text)
	}
	if b.each {
		return "[" + strconv.Quote(text) + "]", nil
	}
	switch f.Value.Type() {
	case "string":
		return strconv.Quote(text), nil
	case "stringArray", "stringSlice":
		items := f.Value.(pflag.SliceValue).GetSlice()
		for i, s := range items {
			items[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case "intSlice":
		return "[" + strings.Join(f.Value.(pflag.SliceValue).GetSlice(), ", ") + "]", nil
	}
	return text, nil
}

// loadConfigWith loads -c FILE (or the defaults) with the flags of table
// that the command line gave over it, and maps errors to exit code 2.
func loadConfigWith(path string, fs *pflag.FlagSet, table keyFlags, fixed ...config.Setting) (*config.Config, error) {
	settings, err := table.settings(fs)
	if err != nil {
		return nil, err
	}
	return loadConfig(path, append(settings, fixed...)...)
}

// throttleYAML writes a --throttle GPU:FACTOR[@START-END] (seconds of
// simulated time) as one item of engine.sim.throttle.
func throttleYAML(text string) (string, error) {
	th, err := sim.ParseThrottle(text)
	if err != nil {
		return "", err
	}
	seconds := func(s float64) string { return time.Duration(s * float64(time.Second)).String() }
	return fmt.Sprintf("[{gpu: %d, clock_factor: %s, start: %s, end: %s}]",
		th.GPU, strconv.FormatFloat(th.ClockFactor, 'g', -1, 64), seconds(th.Start), seconds(th.End)), nil
}

// listYAML writes a comma-separated flag value (--users 50,100,200) as a
// YAML list.
func listYAML(text string) (string, error) { return "[" + text + "]", nil }
