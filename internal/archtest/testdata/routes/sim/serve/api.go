// Package serve is a test server: it serves the routes.
package serve

var routes = []string{"/v1/chat/completions", "/v1/models"}
