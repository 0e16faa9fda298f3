// Package sim calls workload.NewSchedule under another name: accepted.
package sim

import wl "github.com/spoc-project/spoc/workload"

func run(o wl.ScheduleOptions) { _ = wl.NewSchedule(o) }
