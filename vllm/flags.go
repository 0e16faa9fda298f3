package vllm

import (
	"fmt"
	"github.com/spoc-project/spoc/flagcatalog"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// NegationPrefix turns a boolean flag off: vLLM declares its booleans with
// argparse.BooleanOptionalAction, so --enable-prefix-caching has the twin
// --no-enable-prefix-caching.
const NegationPrefix = flagcatalog.NegationPrefix

// FlagName returns the command-line spelling of a parameter name without
// the leading dashes: vLLM flags use hyphens, so "max_num_seqs" and
// "--max-num-seqs" both become "max-num-seqs". It is the one normalisation
// of parameter names in spoc: two names are the same flag exactly when
// their FlagNames are equal.
func FlagName(name string) string { return flagcatalog.Name(name) }

// CutNegation reports whether flag (a FlagName) has the "no-" form of a
// boolean flag and returns the flag it negates. Whether that flag is in
// fact a boolean is for the caller, which knows its flags, to decide.
func CutNegation(flag string) (negated string, ok bool) {
	rest, ok := strings.CutPrefix(flag, NegationPrefix)
	if !ok || rest == "" {
		return flag, false
	}
	return rest, true
}

var flagNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Flags renders p as vLLM command-line flags, sorted by flag name so that the
// same parameters always give the same argv:
//
//	max-num-batched-tokens: 2048   → --max-num-batched-tokens 2048
//	gpu-memory-utilization: 0.9    → --gpu-memory-utilization 0.9
//	enable-prefix-caching: true    → --enable-prefix-caching
//	enable-prefix-caching: false   → --no-enable-prefix-caching
//
// Values must be bool, int, int64, float64 or string. Two names that map to
// the same flag (max_num_seqs and max-num-seqs) are an error.
func Flags(p map[string]any) ([]string, error) {
	names := make([]string, 0, len(p))
	byFlag := make(map[string]string, len(p))
	for k := range p {
		f := FlagName(k)
		if f == "" {
			return nil, fmt.Errorf("render engine flags: empty parameter name %q", k)
		}
		if !flagNameRE.MatchString(f) {
			return nil, fmt.Errorf("render engine flags: parameter %q is not a flag name (letters, digits, '-', '_', '.')", k)
		}
		if prev, dup := byFlag[f]; dup {
			a, b := prev, k
			if b < a {
				a, b = b, a
			}
			return nil, fmt.Errorf("render engine flags: parameters %q and %q are the same flag --%s", a, b, f)
		}
		byFlag[f] = k
		names = append(names, f)
	}
	sort.Strings(names)
	args := make([]string, 0, 2*len(names))
	for _, f := range names {
		k := byFlag[f]
		switch v := p[k].(type) {
		case bool:
			switch fl, known := Catalogue.Lookup(f); {
			case v:
				args = append(args, "--"+f)
			case known && !fl.Negatable:
				// a store_true switch has no --no- form: off is absent
			default:
				args = append(args, "--"+NegationPrefix+f)
			}
		case int:
			args = append(args, "--"+f, strconv.Itoa(v))
		case int64:
			args = append(args, "--"+f, strconv.FormatInt(v, 10))
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("render engine flags: parameter %q: %v is not a finite number", k, v)
			}
			args = append(args, "--"+f, strconv.FormatFloat(v, 'f', -1, 64))
		case string:
			args = append(args, "--"+f, v)
		default:
			return nil, fmt.Errorf("render engine flags: parameter %q: unsupported value %v of type %T (want bool, int, float or string)", k, v, v)
		}
	}
	return args, nil
}

// Merge returns base overlaid with over: a parameter of over replaces the
// base parameter of the same flag name whatever its spelling. Neither input
// is modified.
func Merge(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(over))
	seen := make(map[string]string, len(base)+len(over))
	for _, src := range []map[string]any{base, over} {
		for k, v := range src {
			f := FlagName(k)
			if prev, ok := seen[f]; ok {
				delete(out, prev)
			}
			seen[f] = k
			out[k] = v
		}
	}
	return out
}

// HasFlag reports whether argv already sets flag name, as "--name",
// "--name=value" or the negated "--no-name".
func HasFlag(argv []string, name string) bool {
	f := FlagName(name)
	for _, a := range argv {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		a = strings.SplitN(a, "=", 2)[0]
		if a == "--"+f || a == "--"+NegationPrefix+f || FlagName(a) == f {
			return true
		}
	}
	return false
}

// FlagHost is the flag that sets the address the server binds. vLLM's
// default (no --host) binds every interface; with EnvServerDevMode=1 that
// puts the development routes (PathResetPrefixCache, /sleep, …) on the
// network unauthenticated, so a launcher that opens them passes
// --host 127.0.0.1. SGLang and spoc sim serve spell it the same way.
const FlagHost = "host"

// FlagValue returns the value argv gives flag name ("--name value" or
// "--name=value"; the last one wins, as with argparse) and whether argv
// sets it at all.
func FlagValue(argv []string, name string) (string, bool) {
	f := FlagName(name)
	value, found := "", false
	for i, a := range argv {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, eq := strings.Cut(a, "=")
		if FlagName(k) != f {
			continue
		}
		found = true
		switch {
		case eq:
			value = v
		case i+1 < len(argv):
			value = argv[i+1]
		default:
			value = ""
		}
	}
	return value, found
}

// Flag names spoc itself passes, derived from the engine section rather
// than from engine.params.
const (
	FlagModel                     = "model"
	FlagServedModelName           = "served-model-name"
	FlagTensorParallelSize        = "tensor-parallel-size"
	FlagDataParallelSize          = "data-parallel-size"
	FlagMaxModelLen               = "max-model-len"
	FlagEnablePromptTokensDetails = "enable-prompt-tokens-details"
)
