package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// Dataset names accepted by ReadParquet and spoc corpus build --from.
const (
	DatasetCoderForge = "coderforge"
	DatasetSWERebench = "swe-rebench"
)

// CoderForgeRow is a row of togethercomputer/CoderForge-Preview
// trajectories/*.parquet (the columns spoc reads; others are ignored).
// Messages is a JSON-encoded OpenAI chat list whose tool calls carry their
// arguments as JSON text.
type CoderForgeRow struct {
	TrajectoryID string  `parquet:"trajectory_id,optional"`
	FinishReason string  `parquet:"finish_reason,optional"`
	Image        string  `parquet:"image,optional"`
	Messages     string  `parquet:"messages,optional"`
	Reward       float64 `parquet:"reward,optional"`
	Tools        string  `parquet:"tools,optional"`
	License      string  `parquet:"license,optional"`
}

// SWERebenchRow is a row of nebius/SWE-rebench-openhands-trajectories
// trajectories.parquet. Trajectory is a list of message structs whose
// tool_calls is JSON text, or the literal string "None" on messages without
// calls.
type SWERebenchRow struct {
	TrajectoryID string              `parquet:"trajectory_id,optional"`
	InstanceID   string              `parquet:"instance_id,optional"`
	Repo         string              `parquet:"repo,optional"`
	Trajectory   []SWERebenchMessage `parquet:"trajectory,optional,list"`
	Tools        string              `parquet:"tools,optional"`
	ModelPatch   string              `parquet:"model_patch,optional"`
	ExitStatus   string              `parquet:"exit_status,optional"`
	Resolved     bool                `parquet:"resolved,optional"`
}

// SWERebenchMessage is one element of SWERebenchRow.Trajectory.
type SWERebenchMessage struct {
	Role       string `parquet:"role,optional"`
	Content    string `parquet:"content,optional"`
	Name       string `parquet:"name,optional"`
	ToolCallID string `parquet:"tool_call_id,optional"`
	ToolCalls  string `parquet:"tool_calls,optional"`
}

// batchRows is how many rows are decoded at a time: trajectories can be
// megabytes each, so small batches keep memory bounded.
const batchRows = 16

// ReadParquet streams the trajectories of one parquet file of dataset
// (coderforge or swe-rebench) to fn. Malformed rows (bad JSON in messages,
// unparsable tool calls) are counted in the returned stats and skipped;
// only I/O and schema errors are fatal. name is used in messages.
func ReadParquet(ctx context.Context, r io.ReaderAt, size int64, name, dataset string, fn func(*Trajectory) error) (stats ReadStats, err error) {
	defer func() { // parquet-go panics on schemas it cannot convert and on some corrupt files
		if p := recover(); p != nil {
			err = fmt.Errorf("read parquet %s as %s: %v", name, dataset, p)
		}
	}()
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return stats, fmt.Errorf("open parquet %s: %w", name, err)
	}
	stats.Bytes = size
	switch dataset {
	case DatasetCoderForge:
		err = readRows(ctx, f, name, &stats, func(row *CoderForgeRow) (*Trajectory, string) {
			msgs, perr := parseMessages(row.Messages)
			if perr != nil {
				return nil, "bad messages JSON"
			}
			return &Trajectory{ID: row.TrajectoryID, Source: DatasetCoderForge, License: row.License, Messages: msgs}, ""
		}, fn)
	case DatasetSWERebench:
		err = readRows(ctx, f, name, &stats, func(row *SWERebenchRow) (*Trajectory, string) {
			t := &Trajectory{ID: row.TrajectoryID, Source: DatasetSWERebench, Repo: row.Repo, Patch: row.ModelPatch}
			for _, m := range row.Trajectory {
				calls, perr := parseToolCalls([]byte(m.ToolCalls))
				if perr != nil {
					return nil, "bad tool_calls"
				}
				t.Messages = append(t.Messages, Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: calls})
			}
			return t, ""
		}, fn)
	default:
		return stats, fmt.Errorf("unknown dataset %q (%s or %s)", dataset, DatasetCoderForge, DatasetSWERebench)
	}
	return stats, err
}

func readRows[T any](ctx context.Context, f *parquet.File, name string, stats *ReadStats, convert func(*T) (*Trajectory, string), fn func(*Trajectory) error) error {
	rd := parquet.NewGenericReader[T](f)
	defer rd.Close()
	workers := max(1, min(runtime.GOMAXPROCS(0), 4))
	rows := make([]T, batchRows*workers)
	type result struct {
		t   *Trajectory
		bad string
	}
	results := make([]result, len(rows))
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := rd.Read(rows)
		// Decoding the JSON of a row dominates; rows of a batch are decoded
		// in parallel and handed to fn in order.
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < n; i += workers {
					t, bad := convert(&rows[i])
					results[i] = result{t, bad}
					var zero T
					rows[i] = zero // drop references to large strings early
				}
			}(w)
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			stats.Rows++
			t, bad := results[i].t, results[i].bad
			results[i] = result{}
			if bad != "" {
				stats.malformed(bad)
				continue
			}
			if len(t.Messages) == 0 {
				stats.malformed("no messages")
				continue
			}
			if ferr := fn(t); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read parquet %s row %d: %w", name, stats.Rows+1, err)
		}
	}
}
