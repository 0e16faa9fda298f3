// Package config is spoc's single YAML schema: one plan file with the sections
// engine, workload, sla, search, run, sweep, telemetry, trace and report.
//
// Decoding is strict: unknown keys are errors naming the key and its line, and
// every validation error names the field path and, when the value came from a
// file, its line. Defaults reproduce the reference case of DESIGN.md
// (gpt-oss-120b on 4× H100 serving a coding assistant); defaults that are
// assumptions rather than published facts carry an `assumption` tag, and
// `spoc config default` prints them with a marker.
//
// Every field carries a `doc` struct tag; the commented default config and the
// configuration reference (docs/configuration.md) are generated from those
// tags, so the documentation cannot drift from the schema.
package config
