package loadgen

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestApplyGC(t *testing.T) {
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC") // t.Setenv restores the original value afterwards
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	r1 := applyGC(0)
	if got := debug.SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Fatalf("GC percent during a run = %d, want %d", got, DefaultGCPercent)
	}
	r2 := applyGC(0) // a second, overlapping run
	r1()
	if got := debug.SetGCPercent(DefaultGCPercent); got != DefaultGCPercent {
		t.Fatalf("first run's end restored the target while another run holds it: %d", got)
	}
	r2()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent after the runs = %d, want 100 restored", got)
	}

	// An explicit GCPercent wins; a negative one leaves the setting alone.
	restore := applyGC(250)
	if got := debug.SetGCPercent(250); got != 250 {
		t.Fatalf("explicit GCPercent: got %d, want 250", got)
	}
	restore()
	applyGC(-1)()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("negative GCPercent changed the setting to %d", got)
	}

	// GOGC in the environment wins over the default.
	t.Setenv("GOGC", "100")
	applyGC(0)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set: run changed the GC percent to %d", got)
	}
}
