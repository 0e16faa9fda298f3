package loadgen

// Tests may spell routes.
var want = "http://127.0.0.1/v1/chat/completions"
