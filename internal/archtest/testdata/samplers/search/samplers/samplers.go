// Package samplers is the registry: it may build every sampler.
package samplers

import (
	"github.com/spoc-project/spoc/search/nsga2"
	"github.com/spoc-project/spoc/search/tpe"
)

func New(name string) any {
	switch name {
	case "tpe":
		return tpe.New()
	case "nsga2":
		return nsga2.New()
	}
	return nil
}
