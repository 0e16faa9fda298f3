package plan

import (
	"context"
	"errors"
	"sync"

	"github.com/spoc-project/spoc/capacity"
	"github.com/spoc-project/spoc/engine"
	"github.com/spoc-project/spoc/sim"
)

// correctedSim is the simulator of the configured deployment with the
// correction the calibrate phase fitted. It runs in virtual time only: it
// stands for the real engine in the search, it never serves.
type correctedSim struct {
	*engine.Sim
	mu     sync.Mutex
	c      sim.Correction
	fitted bool
}

var (
	_ engine.Virtual      = (*correctedSim)(nil)
	_ capacity.Calibrated = (*correctedSim)(nil)
)

func (s *correctedSim) set(c sim.Correction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c, s.fitted = c, true
}

// reset puts back c, the correction before any fit: not calibrated.
func (s *correctedSim) reset(c sim.Correction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.c, s.fitted = c, false
}

func (s *correctedSim) correction() sim.Correction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// Calibrated reports whether a fitted correction is in place.
func (s *correctedSim) Calibrated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fitted
}

// VirtualDeployment is the simulator's deployment for p, corrected.
func (s *correctedSim) VirtualDeployment(p engine.Params) (sim.Deployment, error) {
	d, err := s.Sim.VirtualDeployment(p)
	if err != nil {
		return d, err
	}
	d.Correction = s.correction()
	return d, nil
}

// Start refuses: the calibrated simulator only runs in virtual time.
func (s *correctedSim) Start(context.Context, engine.Params) (engine.Server, error) {
	return nil, errors.New("the calibrated simulator runs in virtual time only")
}

// newCorrectedSim is the simulator of s's deployment, starting from the
// configured correction (the correction file's, if any).
func newCorrectedSim(s Setup) (*correctedSim, error) {
	l, err := s.simulator()
	if err != nil {
		return nil, err
	}
	return &correctedSim{Sim: l, c: s.Deployment.Sim.Correction}, nil
}
