//go:build !unix

package loadgen

import "time"

// processCPUTime is unknown on this platform; CPU saturation is not judged.
func processCPUTime() time.Duration { return 0 }
