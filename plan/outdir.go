package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RecordsDir is the folder under a plan's output folder that holds the
// final sweep's records.
const RecordsDir = "records"

// SummaryFile is the file that marks a folder as a spoc plan's output: the
// CLI writes the Summary there as JSON (report.Files).
const SummaryFile = "summary.json"

// checkRecordsOwned fails when dir has a records folder that no spoc plan
// wrote, so that a plan pointed at the wrong folder (a home directory, a
// data set with its own records/) never replaces it. A folder is a plan's
// when its summary.json is a plan summary (it has the spoc_version key
// every Summary writes).
func checkRecordsOwned(dir string) error {
	records := filepath.Join(dir, RecordsDir)
	if _, err := os.Lstat(records); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if isPlanFolder(dir) {
		return nil
	}
	return fmt.Errorf("plan: %s exists but %s holds no spoc plan (no %s with spoc_version): spoc plan replaces records/ only in its own output folder; choose another --out, or move %s away",
		records, dir, SummaryFile, records)
}

// isPlanFolder reports whether dir holds a plan summary.
func isPlanFolder(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return false
	}
	var head struct {
		SpocVersion *string `json:"spoc_version"`
	}
	return json.Unmarshal(b, &head) == nil && head.SpocVersion != nil
}

// swapRecords makes staging the records folder final. The old folder is
// renamed aside first and removed only once the new one is in place, so
// that no failure leaves the folder without either; a missing staging
// folder (a plan that wrote no records) leaves final absent, since old
// records beside a new report would describe another plan.
func swapRecords(staging, final string) error {
	aside := ""
	if _, err := os.Lstat(final); err == nil {
		f, err := os.MkdirTemp(filepath.Dir(final), ".records-old-*")
		if err != nil {
			return fmt.Errorf("plan: replace %s: %w", final, err)
		}
		aside = filepath.Join(f, RecordsDir)
		if err := os.Rename(final, aside); err != nil {
			os.Remove(f)
			return fmt.Errorf("plan: replace %s: %w", final, err)
		}
	}
	if err := os.Rename(staging, final); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if aside != "" {
			if rerr := os.Rename(aside, final); rerr != nil {
				return fmt.Errorf("plan: replace %s: %w (the previous records are in %s)", final, err, aside)
			}
			os.Remove(filepath.Dir(aside))
		}
		return fmt.Errorf("plan: replace %s: %w", final, err)
	}
	if aside != "" {
		if err := os.RemoveAll(filepath.Dir(aside)); err != nil {
			return fmt.Errorf("plan: remove the previous records: %w", err)
		}
	}
	return nil
}
