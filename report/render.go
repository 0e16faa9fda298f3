package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spoc-project/spoc/plan"
)

// JSON writes d as indented JSON (summary.json).
func JSON(w io.Writer, d *plan.Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("write JSON summary: %w", err)
	}
	return nil
}
