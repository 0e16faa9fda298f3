package corpus

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spoc-project/spoc/tokenizer"
)

// DatasetDir names a local source tree as a corpus source.
const DatasetDir = "dir"

// Datasets lists the sources spoc corpus build reads.
var Datasets = []string{DatasetCoderForge, DatasetSWERebench, DatasetDir}

// Source is one input of Build: a dataset kind and a file or folder.
type Source struct {
	Dataset string
	Path    string
}

// BuildOptions tunes Build.
type BuildOptions struct {
	// Licenses keeps only documents whose licence is in the list (compared
	// case-insensitively); empty keeps everything.
	Licenses []string
	// DefaultLicense is the licence of rows and files that carry none.
	DefaultLicense string
	// MinDocBytes drops shorter texts; 0 means DefaultMinDocBytes.
	MinDocBytes int
	// Tokenizer, when set, stores each document's token count.
	Tokenizer *tokenizer.Tokenizer
	// Progress, when set, is called after each input file with the bytes
	// done and the total.
	Progress func(done, total int64)
}

// BuildStats reports what Build read and wrote.
type BuildStats struct {
	ReadStats
	Files    int            `json:"files"`
	Docs     map[Kind]int64 `json:"docs"`
	DocBytes map[Kind]int64 `json:"doc_bytes"`
	Tokens   map[Kind]int64 `json:"tokens,omitempty"`
}

// Build reads every source, extracts documents (Extract for trajectories,
// one per text file for a source tree) and streams them to w as a corpus
// file (JSON lines, see Read). Memory stays bounded by a few trajectories,
// whatever the input size.
func Build(ctx context.Context, sources []Source, w io.Writer, opts BuildOptions) (*BuildStats, error) {
	if opts.MinDocBytes <= 0 {
		opts.MinDocBytes = DefaultMinDocBytes
	}
	type input struct {
		dataset, path string
		size          int64
	}
	var inputs []input
	var total int64
	for _, s := range sources {
		if !slices.Contains(Datasets, s.Dataset) {
			return nil, fmt.Errorf("corpus source %q: unknown dataset (one of %v)", s.Dataset, Datasets)
		}
		if s.Dataset == DatasetDir {
			inputs = append(inputs, input{s.Dataset, s.Path, 0})
			continue
		}
		files, err := parquetFiles(s.Path)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			inputs = append(inputs, input{s.Dataset, f.path, f.size})
			total += f.size
		}
	}
	st := &BuildStats{Docs: map[Kind]int64{}, DocBytes: map[Kind]int64{}}
	if opts.Tokenizer != nil {
		st.Tokens = map[Kind]int64{}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	emit := func(d Doc) error {
		if d.License == "" {
			d.License = opts.DefaultLicense
		}
		if len(opts.Licenses) > 0 && !slices.ContainsFunc(opts.Licenses, func(l string) bool { return strings.EqualFold(l, d.License) }) {
			st.Skipped++
			return nil
		}
		d.Text = tokenizer.Normalize(d.Text)
		if opts.Tokenizer != nil {
			n, err := opts.Tokenizer.Count(d.Text)
			if err != nil {
				return err
			}
			d.Tokens = n
			st.Tokens[d.Kind] += int64(n)
		}
		st.Docs[d.Kind]++
		st.DocBytes[d.Kind] += int64(len(d.Text))
		if err := enc.Encode(&d); err != nil {
			return fmt.Errorf("write corpus: %w", err)
		}
		return nil
	}
	var done int64
	for _, in := range inputs {
		st.Files++
		if in.dataset == DatasetDir {
			if err := walkTree(ctx, in.path, opts.MinDocBytes, emit); err != nil {
				return st, err
			}
			continue
		}
		f, err := os.Open(in.path)
		if err != nil {
			return st, fmt.Errorf("corpus build: %w", err)
		}
		rs, err := ReadParquet(ctx, f, in.size, in.path, in.dataset, func(t *Trajectory) error {
			for _, d := range Extract(t, opts.MinDocBytes) {
				if err := emit(d); err != nil {
					return err
				}
			}
			return nil
		})
		f.Close()
		st.ReadStats.Add(rs)
		if err != nil {
			return st, err
		}
		done += in.size
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("write corpus: %w", err)
	}
	return st, nil
}

// ReadTrajectories streams the trajectories of parquet sources (files or
// folders of *.parquet) to fn, with the combined read statistics.
func ReadTrajectories(ctx context.Context, sources []Source, fn func(*Trajectory) error) (ReadStats, error) {
	var st ReadStats
	for _, s := range sources {
		if s.Dataset != DatasetCoderForge && s.Dataset != DatasetSWERebench {
			return st, fmt.Errorf("trajectory source %q: want %s or %s", s.Dataset, DatasetCoderForge, DatasetSWERebench)
		}
		files, err := parquetFiles(s.Path)
		if err != nil {
			return st, err
		}
		for _, f := range files {
			r, err := os.Open(f.path)
			if err != nil {
				return st, fmt.Errorf("read trajectories: %w", err)
			}
			rs, err := ReadParquet(ctx, r, f.size, f.path, s.Dataset, fn)
			r.Close()
			st.Add(rs)
			if err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

type sizedFile struct {
	path string
	size int64
}

// parquetFiles is path itself, or every *.parquet file under it, sorted.
func parquetFiles(path string) ([]sizedFile, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("corpus source: %w", err)
	}
	if !info.IsDir() {
		return []sizedFile{{path, info.Size()}}, nil
	}
	var out []sizedFile
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, sizedFile{p, fi.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("corpus source %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("corpus source %s: no .parquet files", path)
	}
	return out, nil
}

// proseExts are documentation files; other text files count as code.
var proseExts = map[string]bool{".md": true, ".txt": true, ".rst": true, ".adoc": true}

// maxTreeFileBytes skips larger files (generated code, data).
const maxTreeFileBytes = 1 << 20

// walkTree emits every text file under root as a code or prose document,
// skipping hidden folders, vendored dependencies, binaries and large files.
func walkTree(ctx context.Context, root string, minBytes int, emit func(Doc) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("corpus source %s: %w", root, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > maxTreeFileBytes || fi.Size() < int64(minBytes) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("corpus source %s: %w", p, err)
		}
		if !utf8.Valid(b) || slices.Contains(b, 0) {
			return nil // binary
		}
		rel, _ := filepath.Rel(root, p)
		kind := KindCode
		if proseExts[strings.ToLower(filepath.Ext(name))] {
			kind = KindProse
		}
		return emit(Doc{Kind: kind, Text: string(b), Source: "dir:" + filepath.ToSlash(rel)})
	})
}
