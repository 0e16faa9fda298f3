package telemetry

import (
	"fmt"
	"sort"
	"strings"
)

// nameIndex resolves the names of an exposition to catalog metrics: the
// catalog's own (byName: vLLM's, their older names, SGLang's, DCGM's), or
// a server's own names for the engine roles (serverNames).
type nameIndex struct {
	m map[string]nameEntry
	// server: the names are a server's own, and samples are renamed to
	// the catalog's
	server bool
}

type nameEntry struct {
	metric *Metric
	suffix string
	alias  bool
}

// add indexes name as md's: a counter with and without _total, a
// histogram with its series suffixes.
func (n nameIndex) add(md *Metric, name string, alias bool) {
	switch md.Kind {
	case Counter:
		n.m[name] = nameEntry{md, "", alias}
		n.m[strings.TrimSuffix(name, "_total")] = nameEntry{md, "", alias}
	case Histogram:
		n.m[name] = nameEntry{md, "", alias}
		for _, s := range []string{SuffixBucket, SuffixSum, SuffixCount} {
			n.m[name+s] = nameEntry{md, s, alias}
		}
	default:
		n.m[name] = nameEntry{md, "", alias}
	}
}

func (n nameIndex) lookup(name string) (nameEntry, bool) {
	e, ok := n.m[name]
	return e, ok
}

// byRole indexes the engine metrics of the catalog by their role.
var byRole = func() map[string]*Metric {
	m := make(map[string]*Metric)
	for i := range catalog {
		if r := catalog[i].Role; r != "" {
			m[r] = &catalog[i]
		}
	}
	return m
}()

// Roles lists the engine metric roles (RoleRunning, …), sorted: the keys
// a server's own metric names are mapped by.
func Roles() []string {
	out := make([]string, 0, len(byRole))
	for r := range byRole {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// RoleMetric returns the catalog metric of an engine role.
func RoleMetric(role string) (Metric, bool) {
	m, ok := byRole[role]
	if !ok {
		return Metric{}, false
	}
	return *m, true
}

// serverNames resolves a server that names its engine metrics its own
// way: the names metrics maps each role to (a counter with or without
// _total, a histogram by its base name), and DCGM's names, which belong
// to the GPU exporter rather than to the server. The catalog's engine
// names are not read: a server spoc knows nothing about may expose a
// vllm: metric that means something else.
func serverNames(metrics map[string]string) (nameIndex, error) {
	n := nameIndex{m: make(map[string]nameEntry), server: true}
	for i := range catalog {
		if md := &catalog[i]; md.Source == SourceDCGM {
			for j, name := range append([]string{md.Name}, md.Aliases...) {
				n.add(md, name, j > 0)
			}
		}
	}
	roles := make([]string, 0, len(metrics))
	for r := range metrics {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	owner := map[string]string{}
	for _, r := range roles {
		md, ok := byRole[r]
		if !ok {
			return nameIndex{}, fmt.Errorf("metric role %q: not an engine metric role (one of %s)", r, strings.Join(Roles(), ", "))
		}
		name := metrics[r]
		if !validName([]byte(name)) {
			return nameIndex{}, fmt.Errorf("metric role %q: %q is not a Prometheus metric name", r, name)
		}
		if prev, dup := owner[name]; dup {
			return nameIndex{}, fmt.Errorf("metric roles %q and %q: both mapped to %q", prev, r, name)
		}
		owner[name] = r
		n.add(md, name, false)
	}
	return n, nil
}

// CheckServerMetrics checks a server's own metric names by role (the
// Target.Metrics form): every key a role, every name a metric name, no
// name given to two roles.
func CheckServerMetrics(metrics map[string]string) error {
	_, err := serverNames(metrics)
	return err
}

// ServerQueries are the Prometheus queries of the engine metrics of a
// server whose own names metrics maps by role: each mapped role's metric
// queried by the server's name, every other engine metric left out (an
// empty expression). They replace DefaultQueries' engine entries; DCGM's
// are left as they are.
func ServerQueries(metrics map[string]string) Queries {
	q := make(Queries, len(byRole))
	for r, md := range byRole {
		name, ok := metrics[r]
		if !ok {
			q[md.Name] = ""
			continue
		}
		q[md.Name] = defaultQuery(Metric{Name: name, Kind: md.Kind}, "")
	}
	return q
}
