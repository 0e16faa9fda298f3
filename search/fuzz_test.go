package search

import (
	"encoding/json"
	"testing"
)

// FuzzSpaceJSON decodes arbitrary bytes as a stored space: decoding and
// validation must never panic, and a space that validates must survive a
// JSON round trip unchanged and map its whole internal range to values it
// accepts.
func FuzzSpaceJSON(f *testing.F) {
	f.Add([]byte(`{"params":[{"name":"a","type":"int","low":1,"high":8,"step":1,"log":true}],"rules":["r"]}`))
	f.Add([]byte(`{"params":[{"name":"b","type":"categorical","choices":["x",true,3,2.5]}]}`))
	f.Add([]byte(`{"params":[{"name":"c","type":"float","low":0.8,"high":0.95,"step":0.01}]}`))
	f.Add([]byte(`{"params":[{"name":"d","type":"float","low":-1e308,"high":1e308}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Space
		if err := json.Unmarshal(b, &s); err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal valid space: %v", err)
		}
		var back Space
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(out) {
			t.Fatalf("round trip changed the space:\n%s\n%s", out, again)
		}
		for _, p := range s.Params {
			lo, hi := p.Bounds()
			for _, x := range []float64{lo, hi, (lo + hi) / 2} {
				v := p.FromInternal(x)
				if _, err := p.Contains(v); err != nil {
					t.Fatalf("%+v: FromInternal(%v) = %v rejected: %v", p, x, v, err)
				}
			}
		}
	})
}

func FuzzParseDirection(f *testing.F) {
	for _, s := range []string{"minimize", "MAX", " min ", "up"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDirection(s)
		if err != nil {
			return
		}
		b, err := d.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if d2, err := ParseDirection(string(b)); err != nil || d2 != d {
			t.Fatalf("%q → %v → %s → %v", s, d, b, d2)
		}
	})
}
