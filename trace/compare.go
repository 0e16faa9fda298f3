package trace

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ComparisonRow is one predicted term beside its measured counterpart.
type ComparisonRow struct {
	// Key is the predicted term: a category or a Groups name.
	Key        string     `json:"key"`
	Categories []Category `json:"categories"`
	// MeasuredShare is the measured time of Categories over the measured time
	// of all categories the prediction covers.
	MeasuredShare float64 `json:"measured_share"`
	// PredictedShare is the normalised prediction.
	PredictedShare float64 `json:"predicted_share"`
	// Delta is PredictedShare - MeasuredShare.
	Delta float64 `json:"delta"`
}

// Comparison is a predicted split beside a measured one.
type Comparison struct {
	Rows []ComparisonRow `json:"rows"`
	// UncoveredShare is the measured share of categories the prediction has
	// no term for; the rows are renormalised without it.
	UncoveredShare float64 `json:"uncovered_share"`
}

// Compare puts a predicted split of GPU time beside the measured breakdown.
// predicted maps a category or a group name (Groups: "moe", "misc") to a
// share or to a time in any unit; it is normalised to sum to 1. A category may
// be covered by one key only. The predicted split is plain data so that any
// model (a roofline, a simulator, a previous trace) can supply it.
func Compare(measured *Breakdown, predicted map[string]float64) (*Comparison, error) {
	if measured == nil {
		return nil, errors.New("compare breakdowns: nil measured breakdown")
	}
	if len(predicted) == 0 {
		return nil, errors.New("compare breakdowns: empty prediction")
	}
	covered := map[Category]string{}
	var rows []ComparisonRow
	var predSum float64
	for key, v := range predicted {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("compare breakdowns: predicted %q = %v: want a finite non-negative number", key, v)
		}
		cats, err := resolveKey(key)
		if err != nil {
			return nil, fmt.Errorf("compare breakdowns: predicted key: %w", err)
		}
		for _, c := range cats {
			if prev, dup := covered[c]; dup {
				return nil, fmt.Errorf("compare breakdowns: category %s is covered by both %q and %q", c, prev, key)
			}
			covered[c] = key
		}
		predSum += v
		rows = append(rows, ComparisonRow{Key: key, Categories: cats, PredictedShare: v})
	}
	if predSum == 0 {
		return nil, errors.New("compare breakdowns: predicted shares sum to zero")
	}
	var coveredNS, totalNS int64
	for _, ct := range measured.Categories {
		totalNS += ct.TimeNS
		if _, ok := covered[ct.Name]; ok {
			coveredNS += ct.TimeNS
		}
	}
	for i := range rows {
		var ns int64
		for _, c := range rows[i].Categories {
			ns += measured.Category(c).TimeNS
		}
		rows[i].MeasuredShare = share(ns, coveredNS)
		rows[i].PredictedShare /= predSum
		rows[i].Delta = rows[i].PredictedShare - rows[i].MeasuredShare
	}
	// Report order: by the last category a key covers, so that groups sit
	// after the categories they mostly consist of ("misc" last).
	slices.SortFunc(rows, func(a, b ComparisonRow) int {
		ia, ib := lastIndex(a.Categories), lastIndex(b.Categories)
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a.Key, b.Key)
	})
	return &Comparison{Rows: rows, UncoveredShare: share(totalNS-coveredNS, totalNS)}, nil
}

func lastIndex(cats []Category) int {
	i := -1
	for _, c := range cats {
		i = max(i, slices.Index(Categories, c))
	}
	return i
}
