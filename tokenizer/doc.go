// Package tokenizer counts, encodes and decodes tokens under the tokenizers of
// the served models — o200k_base for gpt-oss and cl100k_base, with
// vocabularies embedded in the binary so it works offline, or a Hugging Face
// tokenizer.json with a byte-level BPE model (Llama 3, Qwen 2, DeepSeek) —
// and cuts text to exact token lengths.
//
// Exact-length cutting rests on one property of the tiktoken pre-tokenizer
// regexes: a boundary right after a newline, followed by a line that starts
// with a visible character (optionally indented by spaces or tabs) other than
// '/', is always a pre-token boundary. Text split into such "safe chunks"
// therefore re-tokenizes, concatenated in any order, to the sum of the
// chunks' token counts; see Chunks, Filler and Cut. A tokenizer.json is
// checked for these properties when it is loaded.
package tokenizer
