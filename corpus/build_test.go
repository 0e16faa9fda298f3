package corpus

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFixture(t *testing.T, dir, dataset string, n int, seed uint64) string {
	t.Helper()
	trajs, err := Synthesize(seed, n, DefaultSyntheticSpec, testTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteParquet(&buf, dataset, trajs); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, dataset+".parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildFromBothDatasetsAndATree(t *testing.T) {
	dir := t.TempDir()
	cf := writeFixture(t, dir, DatasetCoderForge, 5, 1)
	sw := writeFixture(t, filepath.Join(dir), DatasetSWERebench, 4, 2)
	tree := filepath.Join(dir, "tree")
	os.MkdirAll(filepath.Join(tree, "pkg"), 0o755)
	os.MkdirAll(filepath.Join(tree, ".git"), 0o755)
	os.WriteFile(filepath.Join(tree, "pkg", "a.go"), []byte(strings.Repeat("func a() int { return 1 }\n", 5)), 0o644)
	os.WriteFile(filepath.Join(tree, "README.md"), []byte(strings.Repeat("Some documentation line.\n", 5)), 0o644)
	os.WriteFile(filepath.Join(tree, ".git", "HEAD"), []byte(strings.Repeat("ref: refs/heads/main\n", 5)), 0o644)
	os.WriteFile(filepath.Join(tree, "blob.bin"), append(bytes.Repeat([]byte{1, 0, 2}, 40), '\n'), 0o644)

	var out bytes.Buffer
	var progress []int64
	st, err := Build(context.Background(), []Source{{DatasetCoderForge, cf}, {DatasetSWERebench, sw}, {DatasetDir, tree}}, &out, BuildOptions{
		DefaultLicense: "CC-BY-4.0", Tokenizer: testTokenizer(t),
		Progress: func(done, total int64) { progress = append(progress, done) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 9 || st.Malformed != 0 || st.Files != 3 || len(progress) != 2 {
		t.Fatalf("stats %+v, progress %v", st, progress)
	}
	for _, k := range []Kind{KindSystem, KindProse, KindTool, KindDiff, KindCode} {
		if st.Docs[k] == 0 {
			t.Errorf("no %s documents: %+v", k, st.Docs)
		}
	}
	c, err := Read(bytes.NewReader(out.Bytes()), "built")
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, d := range c.Docs {
		if strings.HasPrefix(d.Source, "dir:") {
			sources = append(sources, d.Source)
		}
		if d.License == "" || d.Tokens == 0 {
			t.Fatalf("document %s: licence %q, tokens %d", d.Source, d.License, d.Tokens)
		}
	}
	if strings.Join(sources, ",") != "dir:README.md,dir:pkg/a.go" {
		t.Fatalf("tree documents %v", sources)
	}

	// Licence filter: keep only MIT rows (CoderForge rows rotate Apache/MIT/CC).
	out.Reset()
	st, err = Build(context.Background(), []Source{{DatasetCoderForge, cf}}, &out, BuildOptions{Licenses: []string{"mit"}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ = Read(bytes.NewReader(out.Bytes()), "mit")
	if st.Skipped == 0 || len(c.Docs) == 0 {
		t.Fatalf("licence filter: skipped %d, kept %d", st.Skipped, len(c.Docs))
	}
	for _, d := range c.Docs {
		if d.License != "MIT" {
			t.Fatalf("licence filter kept %q", d.License)
		}
	}

	sum, err := Summarize(bytes.NewReader(out.Bytes()), "mit", testTokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Docs != len(c.Docs) || sum.Licenses["MIT"] != int64(len(c.Docs)) || len(sum.Kinds) == 0 || sum.Kinds[0].Tokens == 0 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestBuildErrors(t *testing.T) {
	var out bytes.Buffer
	if _, err := Build(context.Background(), []Source{{"hf", "x"}}, &out, BuildOptions{}); err == nil || !strings.Contains(err.Error(), `unknown dataset`) {
		t.Errorf("unknown dataset: %v", err)
	}
	if _, err := Build(context.Background(), []Source{{DatasetCoderForge, t.TempDir()}}, &out, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "no .parquet files") {
		t.Errorf("empty folder: %v", err)
	}
}
