// Package archtest holds the tests of spoc's layout: which package may
// import which, and that each rule the design puts in one place (the YAML
// schema, vLLM's flag normalisation, the closed-loop schedule) is defined
// there only. It has no code of its own.
package archtest
