package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spoc-project/spoc/perfmodel"
)

// maxCalibrationBytes bounds a calibration file.
const maxCalibrationBytes = 16 << 20

// ReadCalibration reads cost-model factors from a calibration file: the JSON
// `spoc sim calibrate` writes (an object with a "factors" member, as
// calibrate.Result encodes) or a bare factors object. Unknown fields are
// errors; every factor must be present and valid. name is used in errors.
func ReadCalibration(r io.Reader, name string) (perfmodel.Factors, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCalibrationBytes+1))
	if err != nil {
		return perfmodel.Factors{}, fmt.Errorf("read calibration %s: %w", name, err)
	}
	if len(data) > maxCalibrationBytes {
		return perfmodel.Factors{}, fmt.Errorf("read calibration %s: larger than %d bytes", name, maxCalibrationBytes)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return perfmodel.Factors{}, fmt.Errorf("read calibration %s: %w", name, err)
	}
	raw := data
	if f, ok := probe["factors"]; ok {
		raw = f
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return perfmodel.Factors{}, fmt.Errorf("read calibration %s: factors: %w", name, err)
	}
	for _, n := range perfmodel.FactorNames() {
		if _, ok := fields[n]; !ok {
			return perfmodel.Factors{}, fmt.Errorf("read calibration %s: factor %s is missing", name, n)
		}
	}
	var f perfmodel.Factors
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return perfmodel.Factors{}, fmt.Errorf("read calibration %s: factors: %w", name, err)
	}
	if err := f.Validate(); err != nil {
		return perfmodel.Factors{}, fmt.Errorf("read calibration %s: %w", name, err)
	}
	return f, nil
}

// LoadCalibration reads a calibration file from disk.
func LoadCalibration(path string) (perfmodel.Factors, error) {
	f, err := os.Open(path)
	if err != nil {
		return perfmodel.Factors{}, fmt.Errorf("read calibration: %w", err)
	}
	defer f.Close()
	return ReadCalibration(f, path)
}

// LoadCalibrationEnvelope reads the measured envelope a calibration file
// states (the "envelope" member `spoc sim calibrate` writes since issue 21);
// nil when the file states none (older files, bare factors).
func LoadCalibrationEnvelope(path string) (*perfmodel.Envelope, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read calibration: %w", err)
	}
	var probe struct {
		Envelope *perfmodel.Envelope `json:"envelope"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("read calibration %s: %w", path, err)
	}
	if probe.Envelope != nil && probe.Envelope.PromptTokens.Max == 0 {
		return nil, nil // an empty envelope says nothing
	}
	return probe.Envelope, nil
}
