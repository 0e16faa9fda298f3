// Package flagcatalog is the shape of an engine's flag catalogue: the
// server flags spoc knows of one engine at one version, read from that
// engine's own source, with their kinds, defaults, spellings and choices,
// so that a misspelt or foreign flag is caught before a launch. The
// catalogues themselves are data in the engines' packages (vllm.Flags,
// sglang's catalogue); this package holds what they share: the name rule
// (Name), lookup with aliases and negated switches, value checks, and the
// one reading of an integral parameter value (IntValue).
package flagcatalog
