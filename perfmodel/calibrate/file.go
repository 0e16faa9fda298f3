package calibrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/spoc-project/spoc/perfmodel"
)

// File is a calibration as `spoc sim calibrate --out` writes it and
// `--calibration` reads it: fitted factors with their provenance.
type File struct {
	// Model is the model the points were measured on; the factors apply to
	// its family.
	Model  string `yaml:"model"`
	Engine string `yaml:"engine,omitempty"`
	// Sources are the measurement files fitted.
	Sources []string `yaml:"sources"`
	Date    string   `yaml:"date"`
	Points  int      `yaml:"points"`
	// Params are the factors that were fitted; the others kept their start values.
	Params  []string          `yaml:"params"`
	Factors perfmodel.Factors `yaml:"factors"`
	// MAPE is the validation error per metric on the fitted points, percent.
	MAPE map[string]float64 `yaml:"mape_percent"`
	// CrossValidation is the held-out MAPE per fold, when it was run.
	CrossValidation map[string]map[string]float64 `yaml:"cross_validation_mape_percent,omitempty"`
}

// NewFile describes a fit for writing.
func NewFile(model, date string, sources []string, res Result, folds []Fold) File {
	f := File{Model: model, Sources: sources, Date: date, Points: len(res.Validation.Rows),
		Params: res.Params, Factors: res.Factors, MAPE: res.Validation.MAPE}
	if len(folds) > 0 {
		f.CrossValidation = map[string]map[string]float64{}
		for _, fo := range folds {
			f.CrossValidation[fo.HeldOut] = fo.Validation.MAPE
		}
	}
	return f
}

// Calibration converts the file to perfmodel's form.
func (f File) Calibration() perfmodel.Calibration {
	return perfmodel.Calibration{Family: f.Model, Engine: f.Engine, Factors: f.Factors,
		Source: strings.Join(f.Sources, ", "), Date: f.Date, MAPE: f.MAPE}
}

// WriteFile encodes a calibration as YAML.
func WriteFile(w io.Writer, f File) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("write calibration: %w", err)
	}
	return enc.Close()
}

// ReadFile decodes a calibration written by WriteFile (or by hand). Unknown
// keys are errors; factors it omits take perfmodel.UncalibratedFactors; the
// result must be valid.
func ReadFile(r io.Reader, name string) (File, error) {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return File{}, fmt.Errorf("read calibration %s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	f := File{Factors: perfmodel.UncalibratedFactors}
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return File{}, fmt.Errorf("read calibration %s: empty file", name)
		}
		return File{}, fmt.Errorf("read calibration %s: %w", name, err)
	}
	if err := f.Factors.Validate(); err != nil {
		return File{}, fmt.Errorf("read calibration %s: %w", name, err)
	}
	return f, nil
}
