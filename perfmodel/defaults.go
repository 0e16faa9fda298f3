package perfmodel

import "strings"

// DefaultFactors returns the factors for a model: its family's calibration when
// there is one (Calibrations), UncalibratedFactors otherwise.
func DefaultFactors(m Model) Factors {
	if c, ok := CalibrationFor(m); ok {
		return c.Factors
	}
	return UncalibratedFactors
}

// Calibration is a fitted set of factors with its provenance.
type Calibration struct {
	// Family matches model names containing it (case-insensitive).
	Family  string
	Engine  string // engine and version the measurements came from
	Factors Factors
	Source  string // measurement file
	Date    string // when the fit was made
	// MAPE is the validation error per metric on the source data, in percent.
	MAPE map[string]float64
}

// Calibrations lists the built-in calibrations.
var Calibrations = []Calibration{}

// CalibrationFor returns the built-in calibration of the model's family.
func CalibrationFor(m Model) (Calibration, bool) {
	name := strings.ToLower(m.Name)
	for _, c := range Calibrations {
		if strings.Contains(name, strings.ToLower(c.Family)) {
			return c, true
		}
	}
	return Calibration{}, false
}
