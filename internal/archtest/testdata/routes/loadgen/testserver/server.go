// Package testserver is a test server too.
package testserver

const models = "/v1/models"
