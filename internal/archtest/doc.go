// Package archtest holds the tests of spoc's layout, read from the parsed
// Go code (go/parser, go/ast), never as text: which package may import
// which; that each rule the design puts in one place (the YAML schema,
// vLLM's flag normalisation and routes, the closed-loop schedule, the
// sampler registry, the resolution of the simulated deployment) is there
// only; that the CLI edge stays thin (files of at most 300 lines,
// functions of at most 60); and that only tests import the test harness. Each rule also runs on a small tree under
// testdata that it must reject. It has no code of its own.
package archtest
