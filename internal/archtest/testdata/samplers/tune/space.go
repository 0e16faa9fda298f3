// Package tune chooses samplers by name itself: rejected.
package tune

import (
	"github.com/spoc-project/spoc/search/random"
	t "github.com/spoc-project/spoc/search/tpe"
)

func sampler(name string) any {
	switch name {
	case "tpe":
		return t.New()
	case "random", "other":
		return random.New(1)
	}
	return nil
}
