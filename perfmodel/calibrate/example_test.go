package calibrate_test

import (
	"context"
	"fmt"
	"os"

	"github.com/spoc-project/spoc/perfmodel"
	"github.com/spoc-project/spoc/perfmodel/calibrate"
)

// Validate the built-in gpt-oss calibration on the reference measurements.
func ExampleValidate() {
	f, err := os.Open("testdata/inferencemax_gptoss120b_h100_vllm0.13.csv")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	pts, err := calibrate.ReadMeasurements(f, "reference.csv")
	if err != nil {
		panic(err)
	}
	m, _ := perfmodel.LookupModel(calibrate.DefaultModel)
	v, err := calibrate.Validate(context.Background(), pts, perfmodel.DefaultFactors(m), calibrate.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d points\n", len(v.Rows))
	for _, name := range calibrate.MetricNames {
		fmt.Printf("MAPE %s %.1f%%\n", name, v.MAPE[name])
	}
	// Output:
	// 86 points
	// MAPE output_throughput_per_gpu 2.9%
	// MAPE median_tpot 3.0%
	// MAPE median_ttft 7.1%
}
