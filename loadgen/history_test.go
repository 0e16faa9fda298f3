package loadgen_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spoc-project/spoc/loadgen"
	"github.com/spoc-project/spoc/loadgen/testserver"
	"github.com/spoc-project/spoc/result"
	"github.com/spoc-project/spoc/vllm"
)

// turnKey splits a request id RUN-USER-SESSION-TURN into the id of its
// previous turn and the turn index.
func turnKey(t *testing.T, id string) (prev string, turn int) {
	t.Helper()
	parts := strings.Split(id, "-")
	if len(parts) != 4 {
		t.Fatalf("request id %q", id)
	}
	turn, _ = strconv.Atoi(parts[3])
	return strings.Join(parts[:3], "-") + "-" + strconv.Itoa(turn-1), turn
}

// TestHistoryPolicy checks what the next turn's request carries of a
// reasoning model's reply: the final content always, the reasoning (as
// reasoning_content) only with HistoryKeep, whichever field the server
// streamed it in.
func TestHistoryPolicy(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"", loadgen.HistoryFinal, loadgen.HistoryKeep} {
		for _, field := range []string{vllm.FieldReasoning, vllm.FieldReasoningContent} {
			t.Run(policy+"/"+field, func(t *testing.T) {
				t.Parallel()
				srv := testserver.Start(testserver.Config{TokenInterval: time.Millisecond, ReasoningTokens: 3, ReasoningField: field, KeepLog: true})
				defer srv.Close()
				sink := &collect{}
				r := newRunner(t, srv.URL, loadgen.Options{Users: 1, Duration: 400 * time.Millisecond, HistoryPolicy: policy})
				if _, err := r.Run(context.Background(), loadgen.SyntheticSource{Turns: 3, PrefixTokens: 5, NewTokens: 2, MaxTokens: 6}, sink); err != nil {
					t.Fatal(err)
				}
				for _, rec := range sink.recs {
					if rec.Status == result.StatusOK && (rec.OutputTokens != 6 || rec.ReasoningTokens != 3) {
						t.Fatalf("record: %d output tokens, %d reasoning; want 6 and 3", rec.OutputTokens, rec.ReasoningTokens)
					}
				}
				byID := map[string]testserver.Request{}
				for _, q := range srv.Log() {
					byID[q.ID] = q
				}
				checked := 0
				for id, q := range byID {
					prevID, k := turnKey(t, id)
					if k == 0 {
						continue
					}
					prev, ok := byID[prevID]
					if !ok || prev.Reasoning == "" || prev.Reply == "" {
						t.Fatalf("%s: previous turn %+v", id, prev)
					}
					reply := q.Messages[len(q.Messages)-2]
					wantReasoning := ""
					if policy == loadgen.HistoryKeep {
						wantReasoning = prev.Reasoning
					}
					if reply.Role != "assistant" || reply.Content != prev.Reply || reply.ReasoningContent != wantReasoning || reply.Reasoning != "" {
						t.Fatalf("%s: assistant message %+v; previous reply %q, reasoning %q", id, reply, prev.Reply, prev.Reasoning)
					}
					checked++
				}
				if checked < 2 {
					t.Fatalf("only %d later turns checked", checked)
				}
			})
		}
	}
}

func TestHistoryPolicyValidated(t *testing.T) {
	_, err := loadgen.New(loadgen.Options{Target: "http://x", Users: 1, Duration: time.Second, Renderer: loadgen.FillerRenderer{}, HistoryPolicy: "all"})
	if err == nil || !strings.Contains(err.Error(), `history policy must be "final" or "keep", got "all"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestPromptDriftWithReasoning runs sessions against a reasoning server
// (30 reasoning tokens, then 10 of content, per 40-token reply) whose
// prompt_tokens count words, as the filler renderer's targets do, and
// checks the plan drift the summary reports. When the plan's history
// assumption matches the history policy (and the server's template) the
// drift is zero; the two mismatches are flagged with the size they have.
func TestPromptDriftWithReasoning(t *testing.T) {
	t.Parallel()
	const reasoning, final = 30, 10
	cases := []struct {
		name   string
		policy string
		// planReply is the reply length the plan's targets count in the
		// history (0: the whole reply, as the workload generator does).
		planReply int
		// harmony: the server drops history reasoning from its prompt,
		// as vLLM's gpt-oss renderer does.
		harmony bool
		// perTurn is the expected server − target at turn k, per k.
		perTurn int
	}{
		{name: "final history, plan counts the final content", policy: loadgen.HistoryFinal, planReply: final},
		{name: "kept reasoning on a gpt-oss server, which drops it", policy: loadgen.HistoryKeep, planReply: final, harmony: true},
		// The realistic mistake today: the plan counts the whole output in
		// the history, while the history (and gpt-oss) drop the reasoning.
		{name: "plan counts the reasoning the history drops", policy: loadgen.HistoryFinal, perTurn: -reasoning},
		{name: "reasoning kept where the template renders it, plan without", policy: loadgen.HistoryKeep, planReply: final, perTurn: reasoning},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(testserver.Config{TokenInterval: time.Millisecond, ReasoningTokens: reasoning,
				CountTokens: func(s string) int { return len(strings.Fields(s)) }, DropHistoryReasoning: c.harmony})
			defer srv.Close()
			sink := &collect{}
			r := newRunner(t, srv.URL, loadgen.Options{Users: 2, Duration: time.Second, HistoryPolicy: c.policy})
			src := loadgen.SyntheticSource{Turns: 4, PrefixTokens: 20, NewTokens: 5, MaxTokens: reasoning + final, HistoryReplyTokens: c.planReply}
			rep, err := r.Run(context.Background(), src, sink)
			if err != nil {
				t.Fatal(err)
			}
			sum := result.NewSummary(result.DefaultSLA(), rep.Window)
			later := 0
			for _, rec := range sink.recs {
				sum.Add(rec)
				if rec.Status != result.StatusOK {
					continue
				}
				if got := rec.PromptTokens - rec.PromptTokensTarget; got != c.perTurn*rec.Turn {
					t.Fatalf("turn %d: server %d, target %d: drift %d tokens, want %d", rec.Turn, rec.PromptTokens, rec.PromptTokensTarget, got, c.perTurn*rec.Turn)
				}
				if rec.Turn > 0 {
					later++
				}
			}
			if later < 4 {
				t.Fatalf("only %d later turns", later)
			}
			res := sum.Result()
			d := res.Profiles[0].Drift
			t.Logf("drift %+v, report %+v", d, res.Drift)
			switch {
			case c.perTurn == 0:
				if d.PromptMean != 0 || res.Drift.Flagged {
					t.Fatalf("drift %+v flagged %v, want none", d, res.Drift.Flagged)
				}
			case c.perTurn < 0:
				// turn k: -30k / (33 + 45k) → 0, -38 %, -49 %, -54 %
				if d.PromptMean > -result.DefaultPromptDriftLimit || !res.Drift.Flagged ||
					!strings.HasPrefix(res.Drift.Reasons[0], "synthetic prompt drift -") {
					t.Fatalf("drift %+v, report %+v: want a negative drift flagged", d, res.Drift)
				}
			default:
				// turn k: +30k / (33 + 15k) → 0, +62 %, +95 %, +115 %
				if d.PromptMean < result.DefaultPromptDriftLimit || !res.Drift.Flagged ||
					!strings.HasPrefix(res.Drift.Reasons[0], "synthetic prompt drift +") {
					t.Fatalf("drift %+v, report %+v: want a positive drift flagged", d, res.Drift)
				}
			}
			if math.Abs(d.ReasoningShare-0.75) > 1e-9 || math.Abs(d.OutputFill-1) > 1e-9 {
				t.Fatalf("reasoning share %v, output fill %v; want 0.75 and 1", d.ReasoningShare, d.OutputFill)
			}
		})
	}
}
