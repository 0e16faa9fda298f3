// Package corpus provides the text that workload prompts are cut from: a
// built-in corpus generated deterministically from a seed and shipped in the
// binary (code, prose, tool output, diffs, system prompts — no third-party
// text), and corpus files (JSON lines of documents with a kind, a source and
// a licence) read from and written to any io.Reader/io.Writer.
package corpus
