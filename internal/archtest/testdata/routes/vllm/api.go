// Package vllm defines the routes.
package vllm

const (
	PathPrefix          = "/v1"
	PathChatCompletions = "/v1/chat/completions"
)
