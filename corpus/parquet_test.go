package corpus

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/spoc-project/spoc/tokenizer"
)

func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.New(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func readAll(t *testing.T, data []byte, dataset string) ([]*Trajectory, ReadStats) {
	t.Helper()
	var got []*Trajectory
	stats, err := ReadParquet(context.Background(), bytes.NewReader(data), int64(len(data)), "fixture", dataset, func(tr *Trajectory) error {
		got = append(got, tr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, stats
}

func TestParquetRoundTrip(t *testing.T) {
	trajs, err := Synthesize(1, 6, DefaultSyntheticSpec, testTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range []string{DatasetCoderForge, DatasetSWERebench} {
		var buf bytes.Buffer
		if err := WriteParquet(&buf, ds, trajs); err != nil {
			t.Fatal(err)
		}
		got, stats := readAll(t, buf.Bytes(), ds)
		if stats.Rows != 6 || stats.Malformed != 0 || len(got) != 6 {
			t.Fatalf("%s: stats %+v, %d trajectories", ds, stats, len(got))
		}
		for i, g := range got {
			w := trajs[i]
			if !reflect.DeepEqual(g.Messages, w.Messages) {
				t.Fatalf("%s trajectory %d: messages differ\n got %+v\nwant %+v", ds, i, g.Messages[2], w.Messages[2])
			}
			if ds == DatasetCoderForge && g.License != w.License {
				t.Fatalf("licence %q, want %q", g.License, w.License)
			}
			if ds == DatasetSWERebench && g.Patch != w.Patch {
				t.Fatal("model_patch lost")
			}
		}
		if tc := got[0].Messages[2].ToolCalls; len(tc) != 1 || tc[0].Name != "bash" || tc[0].Arguments != `{"command": "run_tests"}` {
			t.Fatalf("%s: tool call %+v", ds, tc)
		}
	}
}

// TestParquetMalformedRows: bad messages JSON and unparsable tool calls are
// counted and skipped, never fatal; "None" tool calls are no calls.
func TestParquetMalformedRows(t *testing.T) {
	var buf bytes.Buffer
	cw := parquet.NewGenericWriter[CoderForgeRow](&buf)
	rows := []CoderForgeRow{
		{TrajectoryID: "ok", Messages: `[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"a\":1}"}}]}]`, License: "MIT"},
		{TrajectoryID: "bad-json", Messages: `[{"role":"user","content":`},
		{TrajectoryID: "bad-calls", Messages: `[{"role":"assistant","content":"x","tool_calls":"not json"}]`},
		{TrajectoryID: "empty", Messages: `[]`},
	}
	if _, err := cw.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats := readAll(t, buf.Bytes(), DatasetCoderForge)
	if len(got) != 1 || stats.Rows != 4 || stats.Malformed != 3 || stats.Reasons["bad messages JSON"] != 2 || stats.Reasons["no messages"] != 1 {
		t.Fatalf("got %d trajectories, stats %+v", len(got), stats)
	}
	if a := got[0].Messages[1].ToolCalls; len(a) != 1 || a[0].Arguments != `{"a":1}` {
		t.Fatalf("arguments %+v", a)
	}

	buf.Reset()
	sw := parquet.NewGenericWriter[SWERebenchRow](&buf)
	srows := []SWERebenchRow{
		{TrajectoryID: "ok", Trajectory: []SWERebenchMessage{{Role: "user", Content: "fix it", ToolCalls: "None"}, {Role: "assistant", Content: "", ToolCalls: `[{"id":"c","type":"function","function":{"name":"edit","arguments":"{}"}}]`}}},
		{TrajectoryID: "bad", Trajectory: []SWERebenchMessage{{Role: "assistant", ToolCalls: "[{broken"}}},
	}
	if _, err := sw.Write(srows); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	got, stats = readAll(t, buf.Bytes(), DatasetSWERebench)
	if len(got) != 1 || stats.Malformed != 1 || stats.Reasons["bad tool_calls"] != 1 {
		t.Fatalf("swe-rebench: %d trajectories, stats %+v", len(got), stats)
	}
	if got[0].Messages[0].ToolCalls != nil || got[0].Messages[1].ToolCalls[0].Name != "edit" {
		t.Fatalf("tool calls %+v", got[0].Messages)
	}
}

func TestReadParquetErrors(t *testing.T) {
	_, err := ReadParquet(context.Background(), bytes.NewReader([]byte("not parquet")), 11, "x.parquet", DatasetCoderForge, func(*Trajectory) error { return nil })
	if err == nil {
		t.Fatal("garbage accepted")
	}
	trajs, _ := Synthesize(2, 1, DefaultSyntheticSpec, testTokenizer(t))
	var buf bytes.Buffer
	if err := WriteParquet(&buf, DatasetCoderForge, trajs); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadParquet(context.Background(), bytes.NewReader(buf.Bytes()), int64(buf.Len()), "x.parquet", "hf", nil); err == nil {
		t.Fatal("unknown dataset accepted")
	}
}

func FuzzParseMessages(f *testing.F) {
	f.Add(`[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":"[{\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]"}]`)
	f.Add(`[{"role":"tool","content":[{"type":"text","text":"x"}],"tool_calls":"None"}]`)
	f.Fuzz(func(t *testing.T, s string) {
		msgs, err := parseMessages(s)
		if err == nil && msgs == nil {
			t.Fatal("nil messages without error")
		}
	})
}

func FuzzReadParquet(f *testing.F) {
	trajs, err := Synthesize(4, 2, SyntheticSpec{MinSteps: 1, MaxSteps: 2, SystemTokens: 5, TaskTokens: LogNormal{10, 0.1}, OutputTokens: LogNormal{10, 0.1}, ToolTokens: LogNormal{10, 0.1}}, testTokenizer(f))
	if err != nil {
		f.Fatal(err)
	}
	for _, ds := range []string{DatasetCoderForge, DatasetSWERebench} {
		var buf bytes.Buffer
		if err := WriteParquet(&buf, ds, trajs); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes(), ds == DatasetSWERebench)
	}
	f.Fuzz(func(t *testing.T, data []byte, swe bool) {
		ds := DatasetCoderForge
		if swe {
			ds = DatasetSWERebench
		}
		_, _ = ReadParquet(context.Background(), bytes.NewReader(data), int64(len(data)), "fuzz", ds, func(tr *Trajectory) error {
			if len(tr.Messages) == 0 {
				t.Fatal("trajectory without messages passed on")
			}
			return nil
		})
	})
}
