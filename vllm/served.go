package vllm

// ServedName is the model name requests must carry and metrics are
// labelled with: vLLM serves a model under --served-model-name when given,
// else under the model argument itself (path or Hugging Face id). GET
// /v1/models lists it.
func ServedName(model, served string) string {
	if served != "" {
		return served
	}
	return model
}
